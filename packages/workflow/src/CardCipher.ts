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
import * as ConfigProblem from "@gcx/core/ConfigProblem"
import { CardDecryptionError } from "@gcx/core/Errors"
import * as CardFingerprint from "@gcx/poller/CardFingerprint"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as SecureRandom from "effect/crypto/SecureRandom"
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Crypto from "node:crypto"

export {
  /** A sealed card could not be opened here (`@gcx/core/Errors`): a local fault of the data keys. */
  CardDecryptionError
}

/** The environment variable that holds the data key, which seals (and opens). */
export const keyVariable = "GCX_DATA_KEY"

/** The environment variable that holds the previous data key, which only opens (key rotation). */
export const previousKeyVariable = "GCX_DATA_KEY_PREVIOUS"

/** How many bytes a data key has (AES-256). */
export const keyBytes = 32

const ivBytes = 12
const tagBytes = 16
const keyIdBytes = 4
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
        `GCX_DATA_KEY_PREVIOUS: set GCX_DATA_KEY_PREVIOUS to that key`
      : `a sealed secret could not be opened (${this.reason}) with GCX_DATA_KEY or GCX_DATA_KEY_PREVIOUS`
  }
}

/** The cipher service. */
export class CardCipher extends Context.Service<CardCipher, Service>()("@gcx/workflow/CardCipher") {}

/** A parsed data key: its bytes, never shown, and its id (see `keyId`). */
export interface DataKey {
  readonly id: string
  readonly bytes: Redacted.Redacted<Uint8Array>
}

/** A fresh random data key, in base64: a value for `GCX_DATA_KEY`. */
export const generateKey = (): string => Base64.encode(SecureRandom.randomBytesUnsafe(keyBytes))

const keyIdOf = (bytes: Uint8Array): Uint8Array =>
  Crypto.createHash("sha256").update("gcx data key id\0").update(bytes).digest().subarray(0, keyIdBytes)

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")

/** The fewest distinct byte values a data key may hold: a key with fewer is a pattern, not random bytes. */
const minimumDistinctBytes = 16

/**
 * Decodes a base64 data key; the reason it is refused never contains the key. Refused: a length
 * other than 32 bytes, one byte repeated; and, for a key that seals (`sealing`, the default), fewer
 * than 16 distinct bytes (a pattern) and bytes that are all printable text (a password in base64),
 * none of which random bytes ever are in practice. A previous key, which only opens, is spared
 * those two: a weak key of old must still open its cards while they are sealed again.
 */
export const parseKey = (base64: string, options?: { readonly sealing?: boolean }): Result.Result<DataKey, string> => {
  const trimmed = base64.trim()
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return Result.fail("must be base64")
  // Buffer's decoder, not effect/encoding's: it takes base64 without its padding, as before
  const bytes = new Uint8Array(Buffer.from(trimmed, "base64"))
  if (bytes.length !== keyBytes) return Result.fail(`must be ${keyBytes} bytes in base64, not ${bytes.length}`)
  if (bytes.every((byte) => byte === bytes[0])) {
    return Result.fail("must not be one byte repeated (make a key with: openssl rand -base64 32)")
  }
  // 32 random bytes hold about 30 distinct values, and are all printable text once in 10^14
  if (options?.sealing === false) return Result.succeed(dataKeyOf(bytes))
  if (new Set(bytes).size < minimumDistinctBytes) {
    return Result.fail("must be random: it repeats a few bytes (make a key with: openssl rand -base64 32)")
  }
  if (bytes.every((byte) => byte >= 0x20 && byte <= 0x7e)) {
    return Result.fail("must be random bytes, not text such as a password (make a key with: openssl rand -base64 32)")
  }
  return Result.succeed(dataKeyOf(bytes))
}

const dataKeyOf = (bytes: Uint8Array): DataKey => ({
  id: hex(keyIdOf(bytes)),
  bytes: Redacted.make(bytes, { label: "DataKey" })
})

/** The id of a data key: 8 hex digits of a SHA-256 over a fixed label and the key. It tells keys apart, and reveals nothing of them. */
export const keyId = (key: DataKey): string => key.id

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

/** A `ConfigError` saying that the variable `name` is refused, and why (never its value). */
const refused = (name: string, message: string): Config.ConfigError =>
  new Config.ConfigError(
    new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.InvalidValue({ message })))
  )

/**
 * The data key of a variable `name` that is set (32 bytes in base64), the one that seals unless
 * `sealing` is false (`parseKey`); refused, a `ConfigError` naming it.
 */
const parseAs =
  (name: string, sealing = true) => (key: Redacted.Redacted<string>): Effect.Effect<DataKey, Config.ConfigError> =>
    Result.match(parseKey(Redacted.value(key), { sealing }), {
      onFailure: (reason) => Effect.fail(refused(name, `${name} ${reason}`)),
      onSuccess: Effect.succeed
    })

/** The previous data key, of the optional variable `name` (it only opens): absent when it is not set. */
const optionalKeyOf = (name: string): Config.Config<Option.Option<DataKey>> =>
  Config.option(Config.Redacted(name).pipe(Config.mapEffect(parseAs(name, false))))

/** The data key of the required variable `name`; missing or refused, a `ConfigError` naming it. */
const keyOf = (name: string): Config.Config<DataKey> =>
  Config.option(Config.Redacted(name)).pipe(
    Config.mapEffect(Option.match({ onNone: () => Effect.fail(ConfigProblem.missing(name)), onSome: parseAs(name) }))
  )

/** The data keys of a cipher: the one that seals, and the previous one, which only opens. */
export interface Keys {
  readonly current: DataKey
  readonly previous: Option.Option<DataKey>
}

/**
 * The data keys from `GCX_DATA_KEY` (required) and `GCX_DATA_KEY_PREVIOUS`
 * (optional). A key missing, malformed or of one repeated byte fails with a
 * `ConfigError` that names its variable.
 */
export const keysConfig: Config.Config<Keys> = Config.all({
  current: keyOf(keyVariable),
  previous: optionalKeyOf(previousKeyVariable)
})

/** A key given in base64, parsed; a malformed one is a defect (use `layerConfig` for configuration). */
const parseOrThrow = (key: string | Redacted.Redacted<string>, sealing = true): DataKey =>
  Result.getOrThrowWith(
    parseKey(Redacted.isRedacted(key) ? Redacted.value(key) : key, { sealing }),
    (reason) => new Error(`CardCipher: the data key ${reason}`)
  )

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
