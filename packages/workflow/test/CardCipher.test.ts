import { assert, describe, expect, it } from "@effect/vitest"
import { Card } from "@gcx/core"
import { ConfigError, ConfigProvider, Effect, Either, Layer, Redacted } from "effect"
import { CardCipher } from "../src/index.js"

const cardNumber = "6006000000000001"
const pinNumber = "4321"

const validCard = Effect.orDie(Card.validate({ cardNumber, pinNumber, productLineId: "1000" }))

const withKey = (key: string) => Effect.provide(CardCipher.layer(key))

const fromEnv = (env: Record<string, string>) =>
  Layer.launch(CardCipher.layerConfig()).pipe(
    Effect.timeout("1 millis"),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.flip
  )

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
      assert(ConfigError.isConfigError(missing))
      expect(String(missing)).toContain("GCX_DATA_KEY")
      const short = yield* fromEnv({ GCX_DATA_KEY: Buffer.alloc(16).toString("base64") })
      expect(String(short)).toContain("GCX_DATA_KEY must be 32 bytes in base64, not 16")
      const notBase64 = yield* fromEnv({ GCX_DATA_KEY: "not base64 at all!" })
      expect(String(notBase64)).toContain("GCX_DATA_KEY must be base64")
      expect(String(notBase64)).not.toContain("not base64 at all")
    }))

  it("parseKey accepts 32 bytes of base64 only", () => {
    expect(Either.isRight(CardCipher.parseKey(CardCipher.generateKey()))).toBe(true)
    expect(CardCipher.parseKey(Buffer.alloc(33).toString("base64"))).toEqual(
      Either.left("must be 32 bytes in base64, not 33")
    )
  })
})
