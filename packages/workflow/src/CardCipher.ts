/**
 * Card data at rest: the card number and PIN of a durable quote are sealed
 * with AES-256-GCM (`node:crypto`) before the workflow engine persists its
 * payload, and opened only inside the submit activity. The key is
 * `GCX_DATA_KEY`: 32 bytes in base64, read with `Config.redacted`. There is no
 * plaintext fallback: no key, no layer.
 */
import * as Card from "@gcx/core/Card"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"

/** The environment variable that holds the data key. */
export const keyVariable = "GCX_DATA_KEY"

/** How many bytes a data key has (AES-256). */
export const keyBytes = 32

const ivBytes = 12
const tagBytes = 16
const version = 1

/**
 * A card as a durable quote persists it: the masked number and the product
 * line in clear, the number and PIN sealed (`v1` + IV + GCM tag + ciphertext,
 * in base64).
 */
export class SealedCard extends Schema.Class<SealedCard>("@gcx/workflow/SealedCard")({
  /** The card number masked to at most its last 4 digits. */
  masked: Schema.String,
  productLineId: Schema.String,
  /** The number and PIN, sealed with AES-256-GCM; the quote's requestId is the additional authenticated data. */
  sealed: Schema.String
}) {}

/** A sealed card could not be opened: another key, or a damaged payload. Says nothing of the card. */
export class CardDecryptionError extends Schema.TaggedError<CardDecryptionError>()("CardDecryptionError", {
  requestId: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `the card of quote ${this.requestId} could not be decrypted (${this.reason}); is ${keyVariable} the key it was sealed with?`
  }
}

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
  return Either.right(Crypto.createSecretKey(bytes))
}

const encode = (card: Card.Card): Buffer =>
  Buffer.from(JSON.stringify([Redacted.value(card.cardNumber), Redacted.value(card.pinNumber)]), "utf8")

/** Builds the cipher over a key (see `parseKey`). */
export const make = (key: Crypto.KeyObject): Service => {
  const seal = (card: Card.Card, requestId: string): SealedCard => {
    const iv = Crypto.randomBytes(ivBytes)
    const cipher = Crypto.createCipheriv("aes-256-gcm", key, iv)
    cipher.setAAD(Buffer.from(requestId, "utf8"))
    const ciphertext = Buffer.concat([cipher.update(encode(card)), cipher.final()])
    const sealed = Buffer.concat([Buffer.of(version), iv, cipher.getAuthTag(), ciphertext]).toString("base64")
    return new SealedCard({ masked: card.masked, productLineId: card.productLineId, sealed }, true)
  }

  const open = (sealed: SealedCard, requestId: string): Either.Either<Card.Card, CardDecryptionError> => {
    const refuse = (reason: string) => Either.left(new CardDecryptionError({ requestId, reason }))
    const bytes = Buffer.from(sealed.sealed, "base64")
    if (bytes.length <= 1 + ivBytes + tagBytes || bytes[0] !== version) return refuse("not a sealed card")
    let fields: unknown
    try {
      const decipher = Crypto.createDecipheriv("aes-256-gcm", key, bytes.subarray(1, 1 + ivBytes))
      decipher.setAAD(Buffer.from(requestId, "utf8"))
      decipher.setAuthTag(bytes.subarray(1 + ivBytes, 1 + ivBytes + tagBytes))
      const plain = Buffer.concat([decipher.update(bytes.subarray(1 + ivBytes + tagBytes)), decipher.final()])
      fields = JSON.parse(plain.toString("utf8"))
    } catch {
      return refuse("authentication failed")
    }
    if (!Array.isArray(fields) || fields.length !== 2) return refuse("not a sealed card")
    return Card.validateEither({ cardNumber: fields[0], pinNumber: fields[1], productLineId: sealed.productLineId })
      .pipe(Either.mapLeft(() => new CardDecryptionError({ requestId, reason: "the opened card is not valid" })))
  }

  return {
    seal: (card, requestId) => Effect.sync(() => seal(card, requestId)),
    open: (sealed, requestId) => Effect.suspend(() => open(sealed, requestId))
  }
}

/**
 * The data key from `GCX_DATA_KEY` (32 bytes in base64). Missing or
 * malformed, it fails with a `ConfigError` that names the variable.
 */
export const keyConfig: Config.Config<Crypto.KeyObject> = Config.redacted(keyVariable).pipe(
  Config.mapOrFail((key) =>
    parseKey(Redacted.value(key)).pipe(
      Either.mapLeft((reason) => ConfigError.InvalidData([keyVariable], `${keyVariable} ${reason}`))
    )
  )
)

/** The cipher over a data key given in base64; a malformed key is a defect (use `layerConfig` for configuration). */
export const layer = (key: string | Redacted.Redacted<string>): Layer.Layer<CardCipher> =>
  Layer.sync(CardCipher, () =>
    make(Either.getOrThrowWith(
      parseKey(Redacted.isRedacted(key) ? Redacted.value(key) : key),
      (reason) => new Error(`CardCipher: the data key ${reason}`)
    )))

/** The cipher over the key of `GCX_DATA_KEY`; no key, or a malformed one, fails with a `ConfigError` naming it. */
export const layerConfig = (config: Config.Config<Crypto.KeyObject> = keyConfig): Layer.Layer<
  CardCipher,
  ConfigError.ConfigError
> => Layer.effect(CardCipher, Effect.map(config, make))
