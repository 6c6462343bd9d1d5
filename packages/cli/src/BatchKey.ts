/**
 * The key of a batch's fingerprints. A card is recognised on a later run by
 * its fingerprint, an HMAC-SHA-256 of its number, PIN and product line
 * (`fingerprint`). The key is never written in the results file: without it,
 * a fingerprint cannot be tested against candidate card numbers.
 *
 * Where the key comes from, first found:
 * 1. `GCX_BATCH_KEY`: at least 32 characters, not one character repeated
 *    (for a results file shared by several machines, or kept in a secret
 *    store);
 * 2. the key file beside the results file, `<results>.key`: 32 random bytes
 *    in hex, created with mode 0600 when a new results file is started. It
 *    must be the current user's, with no group or other access, and hold 64
 *    hex characters.
 *
 * The results file records the key's id (`keyId`, an HMAC of a fixed label:
 * it tells a wrong key from the right one and reveals nothing of it). A
 * results file with results and no key, a key whose id differs, a weak key or
 * a key file that is not private is a `BatchKeyError` (exit code 2), before
 * any quote.
 * Without `--out`, a key is drawn for the run: it only finds duplicate rows.
 */
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import * as Redacted from "effect/Redacted"
import { createHmac, createSecretKey, type KeyObject, randomBytes } from "node:crypto"

/** The key could not be used: missing, not the one the results file was written with, or unsafe. */
export class BatchKeyError extends Data.TaggedError("BatchKeyError")<{
  readonly reason: "Missing" | "Mismatch" | "Unsafe" | "Invalid"
  readonly message: string
}> {}

/** A batch key (its bytes never leave this module but through HMACs). */
export interface BatchKey {
  readonly secret: Redacted.Redacted<Uint8Array>
  /** Where it came from, for messages: `GCX_BATCH_KEY`, the key file's path, or `this run`. */
  readonly source: string
  /** The key file this run created (a new results file), if it did: see `discardCreated`. */
  readonly created?: string | undefined
}

/** `GCX_BATCH_KEY`: the batch key, when set. */
export const variable: Config.Config<Option.Option<Redacted.Redacted<string>>> = Config.Redacted("GCX_BATCH_KEY").pipe(
  Config.option
)

/** The first `digits` hex digits of an HMAC-SHA-256 (a string of its own, not a slice that keeps the whole digest). */
const hmac = (key: BatchKey, text: string, digits: number): string =>
  createHmac("sha256", keyObject(key)).update(text).digest().toString("hex", 0, digits / 2)

const keyObjects = new WeakMap<BatchKey, KeyObject>()

/** The key as Node's `KeyObject`, made once per key: one per HMAC costs more than the HMAC. */
const keyObject = (key: BatchKey): KeyObject => {
  let object = keyObjects.get(key)
  if (object === undefined) {
    object = createSecretKey(Redacted.value(key.secret))
    keyObjects.set(key, object)
  }
  return object
}

/** The id of a key, stored in the results file: an HMAC of a fixed label, 16 hex digits. */
export const id = (key: BatchKey): string => hmac(key, "gcx batch key id", 16)

/** What a fingerprint is made of: a card's number, PIN and product line (a `BatchFile.Row`'s card). */
export interface Card {
  readonly cardNumber: Redacted.Redacted<string>
  readonly pinNumber: Redacted.Redacted<string>
  readonly productLineId: string
}

/** The fingerprint of a row's card: an HMAC-SHA-256 of its number, PIN and product line, 32 hex digits. */
export const fingerprint = (key: BatchKey, row: { readonly card: Card }): string =>
  hmac(
    key,
    ["gcx card v1", Redacted.value(row.card.cardNumber), Redacted.value(row.card.pinNumber), row.card.productLineId]
      .join("\n"),
    32
  )

/** A key drawn for one run (no results file). */
export const ephemeral: Effect.Effect<BatchKey> = Effect.sync(() => ({
  secret: Redacted.make(new Uint8Array(randomBytes(32))),
  source: "this run"
}))

/** The key file of a results file. */
export const keyFile = (results: string): string => `${results}.key`

const fromText = (text: string, source: string): BatchKey => ({
  secret: Redacted.make(new TextEncoder().encode(text.trim())),
  source
})

const invalid = (message: string) => new BatchKeyError({ reason: "Invalid", message })

/** The shortest `GCX_BATCH_KEY` accepted: 32 characters, at least 32 bytes of key material. */
export const minimumLength = 32

/** `GCX_BATCH_KEY` as a key: at least `minimumLength` characters, not one character repeated. */
const fromVariable = (value: Redacted.Redacted<string>): Effect.Effect<BatchKey, BatchKeyError> => {
  const text = Redacted.value(value).trim()
  if (text.length < minimumLength) {
    return Effect.fail(invalid(
      `GCX_BATCH_KEY must have at least ${minimumLength} characters (make one with: openssl rand -hex 32)`
    ))
  }
  if (text.split("").every((char) => char === text[0])) {
    return Effect.fail(invalid(
      "GCX_BATCH_KEY must not be one character repeated (make one with: openssl rand -hex 32)"
    ))
  }
  return Effect.succeed(fromText(text, "GCX_BATCH_KEY"))
}

/**
 * The key in the key file at `path`: the file must be the current user's
 * (where Node knows the user), with no group or other access, and hold 64 hex
 * characters, as gcx writes it. Its text is read only once it is private.
 */
const fromFile = (
  fs: FileSystem.FileSystem,
  path: string
): Effect.Effect<BatchKey, BatchKeyError | PlatformError.PlatformError> =>
  Effect.gen(function*() {
    const info = yield* fs.stat(path)
    const uid = process.getuid?.()
    if (uid !== undefined && Option.isSome(info.uid) && info.uid.value !== uid) {
      return yield* new BatchKeyError({
        reason: "Unsafe",
        message: `the batch key file ${path} is owned by another user (uid ${info.uid.value}): ` +
          `chown it to yourself if it is yours, or remove it to start a new results file with a new key`
      })
    }
    if ((info.mode & 0o077) !== 0) {
      return yield* new BatchKeyError({
        reason: "Unsafe",
        message: `the batch key file ${path} may be read by others: chmod 600 it`
      })
    }
    const text = yield* fs.readFileString(path)
    if (!/^[0-9a-f]{64}$/i.test(text.trim())) {
      return yield* invalid(
        `the batch key file ${path} does not hold a key (64 hex characters, as gcx writes it): ` +
          `restore it, or remove it to start a new results file with a new key`
      )
    }
    return fromText(text, path)
  })

/**
 * The key of the results file at `results` (its real path): `GCX_BATCH_KEY`,
 * or its key file, created when `keyId` is none (a new results file), and
 * checked against `keyId` otherwise.
 */
export const resolve = (
  results: string,
  keyId: Option.Option<string>
): Effect.Effect<
  BatchKey,
  BatchKeyError | Config.ConfigError | PlatformError.PlatformError,
  FileSystem.FileSystem
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = keyFile(results)
    const key = yield* Option.match(yield* variable, {
      onSome: fromVariable,
      onNone: () =>
        Effect.gen(function*() {
          if (yield* fs.exists(path)) return yield* fromFile(fs, path)
          if (Option.isSome(keyId)) {
            return yield* new BatchKeyError({
              reason: "Missing",
              message: `the key of ${results} is missing: neither ${path} nor GCX_BATCH_KEY is there, ` +
                `so its finished cards cannot be recognised (restore the key, or move ${results} away to start over)`
            })
          }
          const text = randomBytes(32).toString("hex")
          // whole or absent, whenever the process is killed: written beside it, then linked (never over another)
          const temporary = `${path}.${process.pid}.tmp`
          yield* fs.writeFileString(temporary, `${text}\n`, { flag: "w", mode: 0o600 })
          yield* fs.link(temporary, path).pipe(Effect.ensuring(Effect.ignore(fs.remove(temporary))))
          return { ...fromText(text, path), created: path }
        })
    })
    if (Option.isSome(keyId) && keyId.value !== id(key)) {
      return yield* new BatchKeyError({
        reason: "Mismatch",
        message: `the batch key from ${key.source} is not the one ${results} was written with (key id ${keyId.value})`
      })
    }
    return key
  })

/**
 * Removes the key file `key`'s run created, if it did: for a batch refused
 * before its results file is written (a bad input file), which leaves nothing
 * behind. A key file found, or `GCX_BATCH_KEY`, is never touched.
 */
export const discardCreated = (key: BatchKey): Effect.Effect<void, never, FileSystem.FileSystem> =>
  key.created === undefined
    ? Effect.void
    : Effect.flatMap(FileSystem.FileSystem, (fs) => Effect.ignore(fs.remove(key.created!)))
