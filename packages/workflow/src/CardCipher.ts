/**
 * Card data at rest: the card number and PIN of a durable quote are sealed
 * with AES-256-GCM (`node:crypto`) before the workflow engine persists its
 * payload, and opened only inside the submit activity. There is no plaintext
 * fallback: no key, no layer.
 *
 * Keys: `GCX_DATA_KEY` (32 bytes in base64, read with `Config.redacted`)
 * seals every card; `GCX_DATA_KEY_PREVIOUS` (optional) only opens, for the
 * cards sealed before a rotation. A key of one repeated byte (all-zero
 * included) is refused. Each sealed card records the id of the key that
 * sealed it (`keyId`: 8 hex digits of a SHA-256 over a fixed label and the
 * key, never the key), and is opened with the key of that id. A card sealed
 * before key ids (`v1`) is tried with the current key, then the previous.
 */
import * as Card from "@gcx/core/Card"
import { CardDecryptionError } from "@gcx/core/Errors"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
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
}

/** The cipher service. */
export class CardCipher extends Context.Tag("@gcx/workflow/CardCipher")<CardCipher, Service>() {}

/** A fresh random data key, in base64: a value for `GCX_DATA_KEY`. */
export const generateKey = (): string => Crypto.randomBytes(keyBytes).toString("base64")

/** Decodes a base64 data key; the reason it is refused never contains the key. */
export const parseKey = (base64: string): Either.Either<Crypto.KeyObject, string> => {
  const trimmed = base64.trim()
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return Either.left("must be base64")
  const bytes = Buffer.from(trimmed, "base64")
  if (bytes.length !== keyBytes) return Either.left(`must be ${keyBytes} bytes in base64, not ${bytes.length}`)
  if (bytes.every((byte) => byte === bytes[0])) {
    return Either.left("must not be one byte repeated (make a key with: openssl rand -base64 32)")
  }
  return Either.right(Crypto.createSecretKey(bytes))
}

const keyIdOf = (key: Crypto.KeyObject): Buffer =>
  Crypto.createHash("sha256").update("gcx data key id\0").update(key.export()).digest().subarray(0, keyIdBytes)

/** The id of a data key: 8 hex digits of a SHA-256 over a fixed label and the key. It tells keys apart, and reveals nothing of them. */
export const keyId = (key: Crypto.KeyObject): string => keyIdOf(key).toString("hex")

const encode = (card: Card.Card): Buffer =>
  Buffer.from(JSON.stringify([Redacted.value(card.cardNumber), Redacted.value(card.pinNumber)]), "utf8")

/** The fields of a card opened with `key`, or none when the tag does not authenticate. */
const decrypt = (key: Crypto.KeyObject, body: Buffer, requestId: string): Option.Option<unknown> => {
  try {
    const decipher = Crypto.createDecipheriv("aes-256-gcm", key, body.subarray(0, ivBytes))
    decipher.setAAD(Buffer.from(requestId, "utf8"))
    decipher.setAuthTag(body.subarray(ivBytes, ivBytes + tagBytes))
    const plain = Buffer.concat([decipher.update(body.subarray(ivBytes + tagBytes)), decipher.final()])
    return Option.some(JSON.parse(plain.toString("utf8")))
  } catch {
    return Option.none()
  }
}

/**
 * Builds the cipher: `key` seals and opens, `previous` (the key before a
 * rotation) only opens. See `parseKey`.
 */
export const make = (key: Crypto.KeyObject, previous?: Crypto.KeyObject): Service => {
  const keys = previous === undefined ? [key] : [key, previous]
  const ids = keys.map(keyIdOf)
  const header = Buffer.concat([Buffer.of(versions.keyId), ids[0]!])

  const seal = (card: Card.Card, requestId: string): SealedCard => {
    const iv = Crypto.randomBytes(ivBytes)
    const cipher = Crypto.createCipheriv("aes-256-gcm", key, iv)
    cipher.setAAD(Buffer.from(requestId, "utf8"))
    const ciphertext = Buffer.concat([cipher.update(encode(card)), cipher.final()])
    const sealed = Buffer.concat([header, iv, cipher.getAuthTag(), ciphertext]).toString("base64")
    return new SealedCard({ masked: card.masked, productLineId: card.productLineId, sealed }, true)
  }

  const open = (sealed: SealedCard, requestId: string): Either.Either<Card.Card, CardDecryptionError> => {
    const refuse = (reason: string, keyId?: string) =>
      Either.left(new CardDecryptionError({ requestId, reason, ...(keyId === undefined ? {} : { keyId }) }))
    const bytes = Buffer.from(sealed.sealed, "base64")
    const version = bytes[0]
    const start = version === versions.keyId ? 1 + keyIdBytes : 1
    if ((version !== versions.keyId && version !== versions.noKeyId) || bytes.length <= start + ivBytes + tagBytes) {
      return refuse("not a sealed card")
    }
    const id = version === versions.keyId ? bytes.subarray(1, start) : undefined
    const candidates = id === undefined ? keys : keys.filter((_, index) => ids[index]!.equals(id))
    if (candidates.length === 0) return refuse("sealed with another key", id!.toString("hex"))
    const body = bytes.subarray(start)
    const fields = candidates.reduce<Option.Option<unknown>>(
      (opened, candidate) => Option.orElse(opened, () => decrypt(candidate, body, requestId)),
      Option.none()
    )
    if (Option.isNone(fields)) return refuse("authentication failed")
    if (!Array.isArray(fields.value) || fields.value.length !== 2) return refuse("not a sealed card")
    return Card.validateEither({
      cardNumber: fields.value[0],
      pinNumber: fields.value[1],
      productLineId: sealed.productLineId
    }).pipe(Either.mapLeft(() => new CardDecryptionError({ requestId, reason: "the opened card is not valid" })))
  }

  return {
    seal: (card, requestId) => Effect.sync(() => seal(card, requestId)),
    open: (sealed, requestId) => Effect.suspend(() => open(sealed, requestId))
  }
}

/** The data key of the variable `name` (32 bytes in base64); missing or refused, a `ConfigError` naming it. */
const keyOf = (name: string): Config.Config<Crypto.KeyObject> =>
  Config.redacted(name).pipe(
    Config.mapOrFail((key) =>
      parseKey(Redacted.value(key)).pipe(
        Either.mapLeft((reason) => ConfigError.InvalidData([name], `${name} ${reason}`))
      )
    )
  )

/** The data keys of a cipher: the one that seals, and the previous one, which only opens. */
export interface Keys {
  readonly current: Crypto.KeyObject
  readonly previous: Option.Option<Crypto.KeyObject>
}

/**
 * The data keys from `GCX_DATA_KEY` (required) and `GCX_DATA_KEY_PREVIOUS`
 * (optional). A key missing, malformed or of one repeated byte fails with a
 * `ConfigError` that names its variable.
 */
export const keysConfig: Config.Config<Keys> = Config.all({
  current: keyOf(keyVariable),
  previous: Config.option(keyOf(previousKeyVariable))
})

/** A key given in base64, parsed; a malformed one is a defect (use `layerConfig` for configuration). */
const parseOrThrow = (key: string | Redacted.Redacted<string>): Crypto.KeyObject =>
  Either.getOrThrowWith(
    parseKey(Redacted.isRedacted(key) ? Redacted.value(key) : key),
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
  Layer.sync(
    CardCipher,
    () => make(parseOrThrow(key), previous === undefined ? undefined : parseOrThrow(previous))
  )

/**
 * The cipher over `GCX_DATA_KEY` and `GCX_DATA_KEY_PREVIOUS` (`keysConfig`);
 * a key missing or refused fails with a `ConfigError` naming its variable.
 */
export const layerConfig = (config: Config.Config<Keys> = keysConfig): Layer.Layer<
  CardCipher,
  ConfigError.ConfigError
> => Layer.effect(CardCipher, Effect.map(config, (keys) => make(keys.current, Option.getOrUndefined(keys.previous))))
