/**
 * The data keys of the card cipher (`CardCipher`): their variables, their parsing (what a key must
 * be: 32 random bytes, in base64), their ids, and their configuration.
 */
import * as ConfigProblem from "@gcx/core/ConfigProblem"
import * as Config from "effect/Config"
import * as SecureRandom from "effect/crypto/SecureRandom"
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Crypto from "node:crypto"

/** The environment variable that holds the data key, which seals (and opens). */
export const keyVariable = "GCX_DATA_KEY"

/** The environment variable that holds the previous data key, which only opens (key rotation). */
export const previousKeyVariable = "GCX_DATA_KEY_PREVIOUS"

/** How many bytes a data key has (AES-256). */
export const keyBytes = 32

/** How many bytes of a hash a key id has (8 hex digits). */
export const keyIdBytes = 4

/** A parsed data key: its bytes, never shown, and its id (see `keyId`). */
export interface DataKey {
  readonly id: string
  readonly bytes: Redacted.Redacted<Uint8Array>
}

/** A fresh random data key, in base64: a value for `GCX_DATA_KEY`. */
export const generateKey = (): string => Base64.encode(SecureRandom.randomBytesUnsafe(keyBytes))

/** The id of key bytes, as bytes: a SHA-256 over a fixed label and the key, cut to `keyIdBytes`. */
export const keyIdOf = (bytes: Uint8Array): Uint8Array =>
  Crypto.createHash("sha256").update("gcx data key id\0").update(bytes).digest().subarray(0, keyIdBytes)

/** Bytes as lowercase hex. */
export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")

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
  if (bytes.every((byte) => byte >= 0x20 && byte <= 0x7e)) {
    return Result.fail("must be random bytes, not text such as a password (make a key with: openssl rand -base64 32)")
  }
  if (new Set(bytes).size < minimumDistinctBytes) {
    return Result.fail("must be random: it repeats a few bytes (make a key with: openssl rand -base64 32)")
  }
  return Result.succeed(dataKeyOf(bytes))
}

const dataKeyOf = (bytes: Uint8Array): DataKey => ({
  id: hex(keyIdOf(bytes)),
  bytes: Redacted.make(bytes, { label: "DataKey" })
})

/** The id of a data key: 8 hex digits of a SHA-256 over a fixed label and the key. It tells keys apart, and reveals nothing of them. */
export const keyId = (key: DataKey): string => key.id

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
 * (optional). A key missing or refused (`parseKey`: malformed, one repeated
 * byte; for `GCX_DATA_KEY`, a pattern or text too) fails with a `ConfigError`
 * that names its variable.
 */
export const keysConfig: Config.Config<Keys> = Config.all({
  current: keyOf(keyVariable),
  previous: optionalKeyOf(previousKeyVariable)
})

/** A key given in base64, parsed; a malformed one is a defect (use `layerConfig` for configuration). */
export const parseOrThrow = (key: string | Redacted.Redacted<string>, sealing = true): DataKey =>
  Result.getOrThrowWith(
    parseKey(Redacted.isRedacted(key) ? Redacted.value(key) : key, { sealing }),
    (reason) => new Error(`CardCipher: the data key ${reason}`)
  )
