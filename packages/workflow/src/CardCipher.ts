/**
 * Card data at rest: the card number and PIN of a durable quote are sealed
 * with AES-256-GCM before the workflow engine persists its payload, and
 * opened only inside the submit activity. There is no plaintext fallback: no
 * key, no layer.
 *
 * Keys: `GCX_DATA_KEY` (32 bytes in base64, read with `Config.Redacted`)
 * seals every card; `GCX_DATA_KEY_PREVIOUS` (optional) only opens, for the
 * cards sealed before a rotation. A key of one repeated byte (all-zero
 * included) is refused. Each sealed card records the id of the key that
 * sealed it (`keyId`: 8 hex digits of a SHA-256 over a fixed label and the
 * key, never the key), and is opened with the key of that id. A card sealed
 * before key ids (`v1`) is tried with the current key, then the previous.
 *
 * Fingerprints: each data key also gives a fingerprint key (HKDF-SHA-256, its
 * own label: `CardFingerprint.derive`), under which a durable quote's card is
 * fingerprinted, so that a requestId belongs to one card across every node of
 * the deployment (`RequestIds`). A fingerprint is named by the id of the data
 * key it was derived from: after a rotation, one made under the previous key
 * is still compared under that key.
 *
 * The key id is computed synchronously with `node:crypto` when a key is
 * parsed (`effect/crypto`'s `Digest` is an effect): `parseKey` and `keyId`
 * stay plain functions. Sealing and opening are synchronous `node:crypto`
 * too (`createCipheriv`, `randomBytes`): `effect/crypto`'s `Aead` on
 * WebCrypto is a promise and a thread-pool job per call, 235 µs of CPU per
 * seal and open of a card against about 60 µs (bench/NOTES.md, row 6). The
 * persisted layout is the same.
 */
import * as Card from "@gcx/core/Card"
import { CardDecryptionError } from "@gcx/core/Errors"
import * as CardFingerprint from "@gcx/poller/CardFingerprint"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"
import { type DataKey, hex, keyIdBytes, type Keys, keysConfig, parseOrThrow } from "./internal/dataKey.js"

export {
  /** A sealed card could not be opened here (`@gcx/core/Errors`): a local fault of the data keys. */
  CardDecryptionError
}

export {
  /** A parsed data key: its bytes, never shown, and its id (see `keyId`). */
  type DataKey,
  /** A fresh random data key, in base64: a value for `GCX_DATA_KEY`. */
  generateKey,
  /** How many bytes a data key has (AES-256). */
  keyBytes,
  /** The id of a data key: 8 hex digits of a SHA-256 over a fixed label and the key. It tells keys apart, and reveals nothing of them. */
  keyId,
  /** The data keys of a cipher: the one that seals, and the previous one, which only opens. */
  type Keys,
  /** The data keys from `GCX_DATA_KEY` (required) and `GCX_DATA_KEY_PREVIOUS` (optional), each refused with a `ConfigError` naming it. */
  keysConfig,
  /** The environment variable that holds the data key, which seals (and opens). */
  keyVariable,
  /** Decodes a base64 data key (see its notes for what is refused); the reason never contains the key. */
  parseKey,
  /** The environment variable that holds the previous data key, which only opens (key rotation). */
  previousKeyVariable
} from "./internal/dataKey.js"

const ivBytes = 12
const tagBytes = 16
/** `v1`: no key id (the release before key rotation); `v2`: the key id after the version byte. */
const versions = { noKeyId: 1, keyId: 2 } as const

/**
 * A card as a durable quote persists it: the masked number and the product
 * line in clear, the number and PIN sealed (`v2` + key id + IV + GCM tag +
 * ciphertext, in base64).
 */
export class SealedCard extends Schema.Class<SealedCard>("@gcx/workflow/SealedCard")({
  /** The card number masked to at most its last 4 digits. */
  masked: Schema.String,
  productLineId: Schema.String,
  /** The number and PIN, sealed with AES-256-GCM; the quote's requestId is the additional authenticated data. */
  sealed: Schema.String
}) {}

/** The cipher service. */
export interface Service {
  /** Seals a validated card for the quote `requestId`. */
  readonly seal: (card: Card.Card, requestId: string) => Effect.Effect<SealedCard>
  /** Opens a sealed card of the quote `requestId`. */
  readonly open: (sealed: SealedCard, requestId: string) => Effect.Effect<Card.Card, CardDecryptionError>
  /**
   * Seals a secret other than a card (a webhook's signing secret, say) the
   * way cards are sealed: AES-256-GCM under the data key that seals, its id
   * recorded, `context` (the row it belongs to) as the additional
   * authenticated data. In base64.
   */
  readonly sealText: (text: string, context: string) => Effect.Effect<string>
  /** Opens what `sealText` sealed for `context`, under the current or the previous data key. */
  readonly openText: (sealed: string, context: string) => Effect.Effect<Redacted.Redacted<string>, UnsealError>
  /**
   * What `sealText` sealed for `context` under another data key than the one
   * that seals (the previous one of a rotation), sealed again under the one
   * that seals; none when it is sealed under that one already.
   */
  readonly reseal: (sealed: string, context: string) => Effect.Effect<Option.Option<string>, UnsealError>
  /** The card fingerprint under the data key that seals (`GCX_DATA_KEY`), named by its key id. */
  readonly fingerprint: CardFingerprint.CardFingerprint
  /** The card fingerprint under the data key of id `keyId` (the current or the previous one), if this cipher has it. */
  readonly fingerprintOf: (keyId: string) => CardFingerprint.CardFingerprint | undefined
  /** The card fingerprints under every data key of the cipher, the current one first. */
  readonly fingerprints: ReadonlyArray<CardFingerprint.CardFingerprint>
}

/** Why a sealed value could not be opened. */
interface Unopened {
  readonly reason: string
  readonly keyId?: string
}

/** A value sealed with `sealText` could not be opened here: a local fault of the data keys (never shows the value). */
export class UnsealError extends Schema.TaggedError<UnsealError>()("UnsealError", {
  reason: Schema.String,
  /** The id of the data key that sealed it, when it is neither of this cipher's. */
  keyId: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return this.keyId !== undefined
      ? `a sealed secret was sealed with the data key ${this.keyId}, which is neither GCX_DATA_KEY nor ` +
        `GCX_DATA_KEY_PREVIOUS: give this process the deployment's GCX_DATA_KEY, that key (or, to rotate from ` +
        `it to this one, set it as GCX_DATA_KEY_PREVIOUS)`
      : `a sealed secret could not be opened (${this.reason}) with GCX_DATA_KEY or GCX_DATA_KEY_PREVIOUS`
  }
}

/** The cipher service. */
export class CardCipher extends Context.Service<CardCipher, Service>()("@gcx/workflow/CardCipher") {}

const utf8 = new TextEncoder()

const encode = (card: Card.Card): Uint8Array =>
  utf8.encode(JSON.stringify([Redacted.value(card.cardNumber), Redacted.value(card.pinNumber)]))

const concat = (...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((length, part) => length + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/** A key as `node:crypto` takes it, with its id as bytes. */
interface Candidate {
  readonly id: Uint8Array
  readonly key: Crypto.KeyObject
}

const candidateOf = (key: DataKey): Candidate => ({
  id: Buffer.from(key.id, "hex"),
  key: Crypto.createSecretKey(Redacted.value(key.bytes))
})

const algorithm = "aes-256-gcm"

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((byte, index) => byte === b[index])

/**
 * Builds the cipher: `key` seals and opens, `previous` (the key before a
 * rotation) only opens. See `parseKey`.
 */
export const make = (key: DataKey, previous?: DataKey): Effect.Effect<Service> =>
  Effect.sync(() => {
    const candidates = (previous === undefined ? [key] : [key, previous]).map(candidateOf)
    // named in a `CardDecryptionError`: on a cluster, the node that failed to open may be another runner
    const nodeKeyIds = previous === undefined ? [key.id] : [key.id, previous.id]
    const current = candidates[0]!
    const header = concat(Uint8Array.of(versions.keyId), current.id)

    /** `plain` sealed with the current key, `aad` authenticated with it: the persisted layout, in base64. */
    const sealBytes = (plain: Uint8Array, aad: string): string => {
      const iv = Crypto.randomBytes(ivBytes)
      const cipher = Crypto.createCipheriv(algorithm, current.key, iv, { authTagLength: tagBytes })
      cipher.setAAD(utf8.encode(aad))
      const ciphertext = Buffer.concat([cipher.update(plain), cipher.final()])
      // The persisted layout: the tag before the ciphertext
      return Base64.encode(concat(header, iv, cipher.getAuthTag(), ciphertext))
    }

    /** The bytes of `body` opened with `candidate`, or none when the tag does not authenticate. */
    const decrypt = (candidate: Candidate, body: Uint8Array, aad: string): Option.Option<Buffer> => {
      try {
        const decipher = Crypto.createDecipheriv(algorithm, candidate.key, body.subarray(0, ivBytes), {
          authTagLength: tagBytes
        })
        decipher.setAAD(utf8.encode(aad))
        decipher.setAuthTag(body.subarray(ivBytes, ivBytes + tagBytes))
        return Option.some(Buffer.concat([decipher.update(body.subarray(ivBytes + tagBytes)), decipher.final()]))
      } catch {
        return Option.none()
      }
    }

    /** The bytes `sealBytes` sealed with `aad`, opened with the key whose id it records; or why not. */
    const openBytes = (sealed: string, aad: string): Result.Result<Buffer, Unopened> => {
      const bytes = new Uint8Array(Buffer.from(sealed, "base64"))
      const version = bytes[0]
      const start = version === versions.keyId ? 1 + keyIdBytes : 1
      if ((version !== versions.keyId && version !== versions.noKeyId) || bytes.length <= start + ivBytes + tagBytes) {
        return Result.fail({ reason: "not sealed by gcx" })
      }
      const id = version === versions.keyId ? bytes.subarray(1, start) : undefined
      const matching = id === undefined ? candidates : candidates.filter((candidate) => sameBytes(candidate.id, id))
      if (matching.length === 0) return Result.fail({ reason: "sealed with another key", keyId: hex(id!) })
      const body = bytes.subarray(start)
      for (const candidate of matching) {
        const plain = decrypt(candidate, body, aad)
        if (Option.isSome(plain)) return Result.succeed(plain.value)
      }
      return Result.fail({ reason: "authentication failed" })
    }

    const seal = (card: Card.Card, requestId: string) =>
      Effect.sync(() =>
        new SealedCard({
          masked: card.masked,
          productLineId: card.productLineId,
          sealed: sealBytes(encode(card), requestId)
        }, {
          disableChecks: true
        })
      )

    const open = Effect.fnUntraced(function*(sealed: SealedCard, requestId: string) {
      const refuse = (reason: string, keyId?: string) =>
        Effect.fail(
          new CardDecryptionError({ requestId, reason, nodeKeyIds, ...(keyId === undefined ? {} : { keyId }) })
        )
      const opened = openBytes(sealed.sealed, requestId)
      if (Result.isFailure(opened)) {
        const { keyId, reason } = opened.failure
        return yield* refuse(reason === "not sealed by gcx" ? "not a sealed card" : reason, keyId)
      }
      let fields: unknown
      try {
        fields = JSON.parse(opened.success.toString("utf8"))
      } catch {
        return yield* refuse("not a sealed card")
      }
      if (!Array.isArray(fields) || fields.length !== 2) return yield* refuse("not a sealed card")
      const card = Card.validateResult({
        cardNumber: fields[0],
        pinNumber: fields[1],
        productLineId: sealed.productLineId
      })
      return Result.isSuccess(card) ? card.success : yield* refuse("the opened card is not valid")
    })

    const sealText = (text: string, context: string) => Effect.sync(() => sealBytes(utf8.encode(text), context))

    const openText = (sealed: string, context: string) =>
      Result.match(openBytes(sealed, context), {
        onFailure: (unopened) => Effect.fail(new UnsealError(unopened)),
        onSuccess: (plain) => Effect.succeed(Redacted.make(plain.toString("utf8")))
      })

    const reseal = (sealed: string, context: string) =>
      Effect.suspend(() => {
        const bytes = Buffer.from(sealed, "base64")
        const current = bytes[0] === versions.keyId && sameBytes(bytes.subarray(1, 1 + keyIdBytes), header.subarray(1))
        return current
          ? Effect.succeedNone
          : Result.match(openBytes(sealed, context), {
            onFailure: (unopened) => Effect.fail(new UnsealError(unopened)),
            onSuccess: (plain) => Effect.succeed(Option.some(sealBytes(plain, context)))
          })
      })

    const fingerprints = (previous === undefined ? [key] : [key, previous]).map((dataKey) =>
      CardFingerprint.derive(dataKey.bytes, dataKey.id)
    )
    const fingerprintOf = (keyId: string) => fingerprints.find((fingerprint) => fingerprint.keyId === keyId)

    return CardCipher.of({
      seal,
      open,
      sealText,
      openText,
      reseal,
      fingerprint: fingerprints[0]!,
      fingerprintOf,
      fingerprints
    })
  })

/**
 * The cipher over a data key given in base64, and the previous key that still
 * opens, if any; a malformed key is a defect (use `layerConfig` for configuration).
 */
export const layer = (
  key: string | Redacted.Redacted<string>,
  previous?: string | Redacted.Redacted<string>
): Layer.Layer<CardCipher> =>
  Layer.effect(
    CardCipher,
    Effect.flatMap(
      Effect.sync(() =>
        [parseOrThrow(key), previous === undefined ? undefined : parseOrThrow(previous, false)] as const
      ),
      ([current, previous]) => make(current, previous)
    )
  )

/**
 * The cipher over `GCX_DATA_KEY` and `GCX_DATA_KEY_PREVIOUS` (`keysConfig`);
 * a key missing or refused fails with a `ConfigError` naming its variable.
 */
export const layerConfig = (config: Config.Config<Keys> = keysConfig): Layer.Layer<CardCipher, Config.ConfigError> =>
  Layer.effect(
    CardCipher,
    Effect.flatMap(config, (keys) => make(keys.current, Option.getOrUndefined(keys.previous)))
  )
