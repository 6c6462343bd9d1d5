import { assert, describe, expect, it } from "@effect/vitest"
import { Card, ConfigProblem } from "@gcx/core"
import { Config, ConfigProvider, Context, Effect, Layer, Option, Redacted, Result } from "effect"
import * as Crypto from "node:crypto"
import { CardCipher } from "../src/index.js"

const cardNumber = "6006000000000001"
const pinNumber = "4321"

const validCard = Effect.orDie(Card.validate({ cardNumber, pinNumber, productLineId: "1000" }))

const withKey = (key: string) => Effect.provide(CardCipher.layer(key))

const fromEnv = (env: Record<string, string>) =>
  Layer.launch(CardCipher.layerConfig()).pipe(
    Effect.timeout("1 millis"),
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })),
    Effect.flip
  )

/** A card sealed as the release before key ids did (`v1`: version 1, IV, tag, ciphertext), with `key`. */
const sealV1 = (key: string, requestId: string): CardCipher.SealedCard => {
  const iv = Crypto.randomBytes(12)
  const cipher = Crypto.createCipheriv("aes-256-gcm", Buffer.from(key, "base64"), iv)
  cipher.setAAD(Buffer.from(requestId, "utf8"))
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify([cardNumber, pinNumber]), "utf8"), cipher.final()])
  const sealed = Buffer.concat([Buffer.of(1), iv, cipher.getAuthTag(), ciphertext]).toString("base64")
  return new CardCipher.SealedCard({ masked: "****0001", productLineId: "1000", sealed })
}

const openWith = (sealed: CardCipher.SealedCard, requestId: string, key: string, previous?: string) =>
  Effect.flatMap(CardCipher.CardCipher, (cipher) => cipher.open(sealed, requestId)).pipe(
    Effect.map((card) => Redacted.value(card.pinNumber)),
    Effect.provide(CardCipher.layer(key, previous))
  )

const sealWith = (requestId: string, key: string, previous?: string) =>
  Effect.flatMap(
    CardCipher.CardCipher,
    (cipher) => Effect.flatMap(validCard, (card) => cipher.seal(card, requestId))
  ).pipe(Effect.provide(CardCipher.layer(key, previous)))

describe("CardCipher", () => {
  it.effect("seals the number and PIN, keeps the masked number in clear, and opens them again", () =>
    Effect.gen(function*() {
      const cipher = yield* CardCipher.CardCipher
      const sealed = yield* cipher.seal(yield* validCard, "request-1")
      expect(sealed.masked).toBe("****0001")
      expect(sealed.productLineId).toBe("1000")
      const encoded = JSON.stringify(sealed)
      expect(encoded).not.toContain(cardNumber)
      expect(encoded).not.toContain(pinNumber)
      const opened = yield* cipher.open(sealed, "request-1")
      expect([Redacted.value(opened.cardNumber), Redacted.value(opened.pinNumber)]).toEqual([cardNumber, pinNumber])
      expect([opened.masked, opened.productLineId]).toEqual([sealed.masked, "1000"])
      // Two seals of one card differ (a fresh IV each time).
      expect((yield* cipher.seal(yield* validCard, "request-1")).sealed).not.toBe(sealed.sealed)
    }).pipe(withKey(CardCipher.generateKey())))

  it.effect("another key, another requestId or a damaged payload: CardDecryptionError, which says nothing of the card", () =>
    Effect.gen(function*() {
      const sealed = yield* Effect.flatMap(
        CardCipher.CardCipher,
        (cipher) => Effect.flatMap(validCard, (card) => cipher.seal(card, "request-2"))
      ).pipe(withKey(CardCipher.generateKey()))
      const cipher = yield* CardCipher.CardCipher
      const otherKey = yield* Effect.flip(cipher.open(sealed, "request-2"))
      expect(otherKey._tag).toBe("CardDecryptionError")
      expect(otherKey.message).toContain("GCX_DATA_KEY")
      // it names this node's key, so that a client shown a runner's failure can tell whose key differs
      const own = cipher.fingerprint.keyId
      expect(otherKey.nodeKeyIds).toEqual([own])
      expect(otherKey.message).toContain(`neither the GCX_DATA_KEY (${own}) of the node that opened it`)
      expect(otherKey.message).not.toContain(cardNumber)
      const damaged = yield* Effect.flip(
        cipher.open(new CardCipher.SealedCard({ ...sealed, sealed: "AQID" }), "request-2")
      )
      expect(damaged.reason).toBe("not a sealed card")
    }).pipe(withKey(CardCipher.generateKey())))

  it.effect("the requestId is authenticated: a sealed card cannot be moved to another quote", () =>
    Effect.gen(function*() {
      const cipher = yield* CardCipher.CardCipher
      const sealed = yield* cipher.seal(yield* validCard, "request-3")
      const error = yield* Effect.flip(cipher.open(sealed, "request-4"))
      expect(error.reason).toBe("authentication failed")
    }).pipe(withKey(CardCipher.generateKey())))

  it.effect("GCX_DATA_KEY missing or malformed: a ConfigError that names it; never a plaintext fallback", () =>
    Effect.gen(function*() {
      const missing = yield* fromEnv({})
      assert(missing instanceof Config.ConfigError)
      expect(String(missing)).toContain("GCX_DATA_KEY")
      // gcx prints this line: "is not set", never Effect 4's "is not a string" for a missing variable.
      expect(ConfigProblem.fromError(missing)).toEqual([
        { path: "GCX_DATA_KEY", kind: "missing", message: "GCX_DATA_KEY is not set" }
      ])
      const short = yield* fromEnv({ GCX_DATA_KEY: Buffer.alloc(16).toString("base64") })
      expect(String(short)).toContain("GCX_DATA_KEY must be 32 bytes in base64, not 16")
      const notBase64 = yield* fromEnv({ GCX_DATA_KEY: "not base64 at all!" })
      expect(String(notBase64)).toContain("GCX_DATA_KEY must be base64")
      expect(String(notBase64)).not.toContain("not base64 at all")
    }))

  it.effect("a key of one repeated byte (all-zero included), current or previous: a ConfigError naming its variable", () =>
    Effect.gen(function*() {
      const good = CardCipher.generateKey()
      for (const byte of [0x00, 0x41, 0xff]) {
        const repeated = Buffer.alloc(32, byte).toString("base64")
        const current = yield* fromEnv({ GCX_DATA_KEY: repeated })
        assert(current instanceof Config.ConfigError)
        expect(String(current)).toContain("GCX_DATA_KEY must not be one byte repeated")
        const previous = yield* fromEnv({ GCX_DATA_KEY: good, GCX_DATA_KEY_PREVIOUS: repeated })
        expect(String(previous)).toContain("GCX_DATA_KEY_PREVIOUS must not be one byte repeated")
      }
      const malformed = yield* fromEnv({ GCX_DATA_KEY: good, GCX_DATA_KEY_PREVIOUS: "short" })
      expect(String(malformed)).toContain("GCX_DATA_KEY_PREVIOUS must be 32 bytes in base64")
    }))

  it.effect("a key that is a pattern or text (a password in base64) is refused; random keys are taken", () =>
    Effect.gen(function*() {
      const pattern = yield* fromEnv({
        GCX_DATA_KEY: Buffer.from(Array.from({ length: 32 }, (_, i) => i % 4)).toString("base64")
      })
      expect(String(pattern)).toContain("GCX_DATA_KEY must be random: it repeats a few bytes")
      const password = Buffer.from("passwordpasswordpasswordpassword").toString("base64")
      const repeated = String(yield* fromEnv({ GCX_DATA_KEY: password }))
      expect(repeated).toContain("GCX_DATA_KEY must be random bytes, not text")
      const phrase = Buffer.from("correct horse battery staple!!!!").toString("base64")
      const text = String(yield* fromEnv({ GCX_DATA_KEY: phrase }))
      expect(text).toContain("GCX_DATA_KEY must be random bytes, not text")
      for (const sentinel of [password, phrase]) expect(repeated + text).not.toContain(sentinel)
      // an old weak key still opens as the previous one, while its cards are sealed again under a strong one
      const rotating = yield* Layer.build(CardCipher.layerConfig()).pipe(
        Effect.scoped,
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromEnv({ env: { GCX_DATA_KEY: CardCipher.generateKey(), GCX_DATA_KEY_PREVIOUS: phrase } })
        )
      )
      expect(Context.get(rotating, CardCipher.CardCipher).fingerprints).toHaveLength(2)
      // what `openssl rand -base64 32` gives is always taken
      for (let i = 0; i < 1000; i++) {
        expect(Result.isSuccess(CardCipher.parseKey(Crypto.randomBytes(32).toString("base64")))).toBe(true)
      }
    }))

  it.effect("rotation: GCX_DATA_KEY seals, GCX_DATA_KEY_PREVIOUS still opens; each card records its key's id", () =>
    Effect.gen(function*() {
      const [old, current] = [CardCipher.generateKey(), CardCipher.generateKey()]
      const sealedOld = yield* sealWith("request-5", old)
      expect(yield* openWith(sealedOld, "request-5", current, old)).toBe(pinNumber)
      // sealing under rotation uses the current key: the old key alone does not open it
      const sealedNew = yield* sealWith("request-6", current, old)
      expect(yield* openWith(sealedNew, "request-6", current)).toBe(pinNumber)
      const unknown = yield* Effect.flip(openWith(sealedNew, "request-6", old))
      const currentId = Result.getOrThrow(Result.map(CardCipher.parseKey(current), CardCipher.keyId))
      expect(currentId).toMatch(/^[0-9a-f]{8}$/)
      expect(unknown.keyId).toBe(currentId)
      expect(unknown.message).toContain(`sealed with the data key ${currentId}`)
      expect(unknown.message).toContain("GCX_DATA_KEY_PREVIOUS")
      // the key id is not the key, nor a part of it
      expect(Buffer.from(current, "base64").toString("hex")).not.toContain(currentId)
    }))

  it.effect("reseal: a secret of the previous key sealed again under the current one; none for the current's", () =>
    Effect.gen(function*() {
      const [old, current] = [CardCipher.generateKey(), CardCipher.generateKey()]
      const cipherOf = (key: string, previous?: string) =>
        Effect.provide(CardCipher.CardCipher, CardCipher.layer(key, previous))
      const sealedOld = yield* Effect.flatMap(cipherOf(old), (cipher) => cipher.sealText("whsec_secret", "row-1"))
      const rotating = yield* cipherOf(current, old)
      const resealed = Option.getOrThrow(yield* rotating.reseal(sealedOld, "row-1"))
      // the current key alone opens it, for the same row only
      const alone = yield* cipherOf(current)
      expect(Redacted.value(yield* alone.openText(resealed, "row-1"))).toBe("whsec_secret")
      expect((yield* Effect.flip(alone.openText(resealed, "row-2")))._tag).toBe("UnsealError")
      expect(yield* rotating.reseal(resealed, "row-1")).toEqual(Option.none())
      // a secret sealed under neither key: UnsealError naming the key that sealed it
      const stranger = yield* Effect.flip(alone.reseal(sealedOld, "row-1"))
      expect(stranger.keyId).toBe(Result.getOrThrow(Result.map(CardCipher.parseKey(old), CardCipher.keyId)))
    }))

  it.effect("a card sealed before key ids (v1) opens with the current key or the previous one", () =>
    Effect.gen(function*() {
      const [old, current] = [CardCipher.generateKey(), CardCipher.generateKey()]
      expect(yield* openWith(sealV1(current, "request-7"), "request-7", current, old)).toBe(pinNumber)
      expect(yield* openWith(sealV1(old, "request-7"), "request-7", current, old)).toBe(pinNumber)
      const neither = yield* Effect.flip(openWith(sealV1(old, "request-7"), "request-7", current))
      expect(neither.reason).toBe("authentication failed")
      expect(neither.message).toContain("GCX_DATA_KEY_PREVIOUS")
    }))

  it("seals and opens synchronously (node:crypto, no WebCrypto promise or thread-pool job per card)", () => {
    const key = CardCipher.generateKey()
    const opened = Effect.runSync(
      Effect.gen(function*() {
        const cipher = yield* CardCipher.CardCipher
        return yield* cipher.open(yield* cipher.seal(yield* validCard, "request-8"), "request-8")
      }).pipe(withKey(key))
    )
    expect(Redacted.value(opened.pinNumber)).toBe(pinNumber)
  })

  it.effect("the layout is 1.0's (v2, key id, IV, tag, ciphertext): WebCrypto opens what it seals, and the reverse", () =>
    Effect.gen(function*() {
      const key = CardCipher.generateKey()
      const subtleKey = yield* Effect.promise(() =>
        globalThis.crypto.subtle.importKey("raw", Buffer.from(key, "base64"), "AES-GCM", false, ["encrypt", "decrypt"])
      )
      const aad = Buffer.from("request-9", "utf8")
      // Sealed here, opened with WebCrypto (which takes `ciphertext‖tag`).
      const sealed = Buffer.from((yield* sealWith("request-9", key)).sealed, "base64")
      const body = sealed.subarray(1 + 4)
      const plain = yield* Effect.promise(() =>
        globalThis.crypto.subtle.decrypt(
          { name: "AES-GCM", iv: body.subarray(0, 12), additionalData: aad },
          subtleKey,
          Buffer.concat([body.subarray(28), body.subarray(12, 28)])
        )
      )
      expect(JSON.parse(Buffer.from(plain).toString("utf8"))).toEqual([cardNumber, pinNumber])
      // Sealed with WebCrypto as 1.0 did, opened here.
      const iv = Crypto.randomBytes(12)
      const out = Buffer.from(
        yield* Effect.promise(() =>
          globalThis.crypto.subtle.encrypt(
            { name: "AES-GCM", iv, additionalData: aad },
            subtleKey,
            Buffer.from(JSON.stringify([cardNumber, pinNumber]), "utf8")
          )
        )
      )
      const webSealed = new CardCipher.SealedCard({
        masked: "****0001",
        productLineId: "1000",
        sealed: Buffer.concat([
          sealed.subarray(0, 5),
          iv,
          out.subarray(out.length - 16),
          out.subarray(0, out.length - 16)
        ])
          .toString("base64")
      })
      expect(yield* openWith(webSealed, "request-9", key)).toBe(pinNumber)
    }))

  it("parseKey accepts 32 bytes of base64 only", () => {
    expect(Result.isSuccess(CardCipher.parseKey(CardCipher.generateKey()))).toBe(true)
    expect(CardCipher.parseKey(Buffer.alloc(33).toString("base64"))).toEqual(
      Result.fail("must be 32 bytes in base64, not 33")
    )
  })
})
