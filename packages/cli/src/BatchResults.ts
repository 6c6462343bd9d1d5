/**
 * The results file of `gcx batch --out <file>`: a header line, then one JSON
 * line per card with its fingerprint, the masked card, the outcome and the
 * transaction id. It never holds a PIN, a full card number, or the key that
 * made the fingerprints (`BatchKey`).
 *
 * - The header, `{"format":"gcx-batch-results","version":2,"keyId":...}`,
 *   tells a results file from any other file: `--out` refuses an existing
 *   file without it (a CSV, an older results file), and refuses the batch
 *   file itself (same real path or same inode: `./x`, a symlink, a hard link).
 * - Every write replaces the whole file through a temporary file and a
 *   rename: a crash leaves the old file or the new one, whole.
 * - Resuming: a card whose line says `completed`, or a card outcome (group
 *   `card`: trying again gives the same answer), is finished and skipped. Any
 *   other failure is tried again, and its line replaced.
 */
import * as Wire from "@gcx/core/Wire"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Path from "node:path"
import { CliError, ExitCode } from "./ExitCode.js"
import * as Text from "./Text.js"

/** The first line of a results file. */
export class Header extends Schema.Class<Header>("@gcx/cli/BatchResults/Header")({
  format: Schema.Literal("gcx-batch-results"),
  version: Schema.Literal(2),
  /** The id of the key of the fingerprints (`BatchKey.id`). */
  keyId: Schema.String
}) {}

/** The outcome of one card, as one line of the results file. */
export class Result extends Schema.Class<Result>("@gcx/cli/BatchResults/Result")({
  /** The card's fingerprint (`BatchKey.fingerprint`): what recognises it on a later run, wherever its row is. */
  key: Schema.String,
  /** The line of the batch file it was read from, from 1, on the run that wrote it. */
  line: Schema.Int,
  /** The masked card number. */
  card: Schema.String,
  productLineId: Schema.String,
  status: Schema.Literals(["completed", "failed"]),
  transactionId: Schema.optionalKey(Schema.String),
  actualCardValue: Schema.optionalKey(Wire.Money),
  exchangeCardValue: Schema.optionalKey(Wire.Money),
  /** The recovery group of the error (`card`, `merchant`, `service`, ...). */
  group: Schema.optionalKey(Schema.String),
  /** The error's tag (`InvalidCard`). */
  error: Schema.optionalKey(Schema.String),
  errorCode: Schema.optionalKey(Schema.String),
  /** What to tell the customer, when the error carries it. */
  userMessage: Schema.optionalKey(Schema.String),
  /** The error's message, for the operator. */
  message: Schema.optionalKey(Schema.String),
  finishedAt: Wire.Timestamp
}) {}

/** Whether a result is final: the card is skipped on a later run. */
export const isFinal = (result: Result): boolean => result.status === "completed" || result.group === "card"

const HeaderLine = Schema.fromJsonString(Header)
const ResultLine = Schema.fromJsonString(Result)
const decodeHeader = Schema.decodeUnknownOption(HeaderLine)
const decodeResult = Schema.decodeUnknownOption(ResultLine)

/** A result as its line, without the newline. */
export const encode = (result: Result): string => Text.json(Schema.encodeSync(Result)(result))

/** What a results file holds. */
export interface Loaded {
  readonly header: Header
  readonly results: ReadonlyArray<Result>
}

/** Where results are written: the real path behind `--out`, and what it holds already. */
export interface Target {
  readonly path: string
  readonly loaded: Option.Option<Loaded>
}

const refused = (out: string, why: string) =>
  new CliError({ code: ExitCode.Usage, message: `--out ${Text.safe(out)} ${why}` })

/**
 * The target of `--out` for the batch file `input`: refused (exit 2) when it
 * is the batch file itself, a directory, or an existing file that is not a
 * results file; an empty or missing file starts a new one.
 */
export const target = (
  input: string,
  out: string
): Effect.Effect<Target, CliError | PlatformError.PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const inputPath = yield* fs.realPath(input)
    const inputInfo = yield* fs.stat(inputPath)
    const exists = yield* fs.exists(out)
    const path = exists ? yield* fs.realPath(out) : Path.join(yield* fs.realPath(Path.dirname(out)), Path.basename(out))
    if (path === inputPath) return yield* refused(out, "is the batch file itself: choose another results file")
    if (!exists) return { path, loaded: Option.none() }
    const info = yield* fs.stat(path)
    if (info.type !== "File") return yield* refused(out, "is not a file")
    if (
      info.dev === inputInfo.dev && Option.isSome(info.ino) && Option.getOrUndefined(inputInfo.ino) === info.ino.value
    ) {
      return yield* refused(out, "is the batch file itself (a link to it): choose another results file")
    }
    const lines = (yield* fs.readFileString(path)).split("\n").filter((line) => line.trim() !== "")
    if (lines.length === 0) return { path, loaded: Option.none() }
    const header = decodeHeader(lines[0])
    if (Option.isNone(header)) {
      return yield* refused(out, "exists and is not a gcx results file: it is left alone; choose another path")
    }
    const results = lines.slice(1).map((line) => decodeResult(line))
    if (results.some(Option.isNone)) {
      return yield* refused(out, "has lines that are not results: it is left alone; choose another path")
    }
    return { path, loaded: Option.some({ header: header.value, results: results.flatMap(Option.toArray) }) }
  })

/** Writes a results file whole: a temporary file beside it, then a rename over it. */
export const write = (
  path: string,
  header: Header,
  results: Iterable<Result>
): Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const temporary = `${path}.${process.pid}.tmp`
    const text = [Text.json(Schema.encodeSync(Header)(header)), ...Array.from(results, encode)].join("\n") + "\n"
    yield* fs.writeFileString(temporary, text, { mode: 0o600 })
    yield* fs.rename(temporary, path)
  })

/** Records results in a results file, each write whole (see `write`). */
export interface Writer {
  /** Records a card's result (replacing an earlier one of the same card) and writes the file. */
  readonly record: (result: Result) => Effect.Effect<void, PlatformError.PlatformError>
}

/**
 * A writer of the results file at `path`, starting with `results`, written
 * at once. Results recorded at the same time share one write.
 */
export const writer = (
  path: string,
  header: Header,
  results: ReadonlyArray<Result>
): Effect.Effect<Writer, PlatformError.PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const byKey = new Map(results.map((result) => [result.key, result]))
    let version = 0
    let written = -1
    const lock = yield* Semaphore.make(1)
    const flush = lock.withPermits(1)(Effect.suspend(() => {
      if (written >= version) return Effect.void
      const writing = version
      return write(path, header, byKey.values()).pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            written = writing
          })
        ),
        Effect.provideService(FileSystem.FileSystem, fs)
      )
    }))
    yield* flush
    return {
      record: (result) =>
        Effect.suspend(() => {
          byKey.set(result.key, result)
          version += 1
          return flush
        })
    }
  })
