/**
 * The results file of `gcx batch --out <file>`: a header line, then JSON
 * lines, appended as the batch goes (`BatchLog`), each about one card, found
 * by its fingerprint (`key`). It never holds a PIN, a full card number, or
 * the key that made the fingerprints (`BatchKey`).
 *
 * - The header, `{"format":"gcx-batch-results","version":3,"keyId":...}`,
 *   tells a results file from any other file: `--out` refuses an existing
 *   file without it (a CSV, a file of another program), and refuses the batch
 *   file itself (same real path or same inode: `./x`, a symlink, a hard link).
 *   A version 2 file (results only) is read, and rewritten as version 3.
 * - A card's lines, in order: `posting` (its requestId and the
 *   `previousAttempts` of the POST about to be sent, written and fsynced
 *   before that POST goes out; again before each retry), `submitted` (the
 *   transaction the POST answered with), then its result (`completed` or
 *   `failed`). The latest line of a card is what counts; at the end of a run
 *   the file is compacted to that line alone, one line per card.
 * - A last line without its line break (a write cut by a crash) is ignored.
 *   Any other line that is not one of these is a refusal: the file is left
 *   alone.
 *
 * What a re-run does with a card, by its latest line (`resumeOf`):
 * - `completed`, or a card outcome (group `card`: trying again gives the same
 *   answer): finished, skipped.
 * - a transaction whose outcome is not known yet (`submitted`, or a failure
 *   such as `PollTimeout` after it): tracked, never POSTed again.
 * - `posting`, or a failed POST: POSTed again with the same requestId and
 *   `previousAttempts + 1`, so that the service answers with the transaction
 *   of an earlier attempt if one went through.
 * - any other failure (the transaction failed: a merchant or service
 *   outcome): quoted again, as a new request.
 */
import * as Wire from "@gcx/core/Wire"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import * as BatchLines from "./BatchLines.js"
import { CliError, ExitCode } from "./ExitCode.js"
import * as Text from "./Text.js"

/** The version of the results file this gcx writes. */
export const version = 3

/** The first line of a results file. */
export class Header extends Schema.Class<Header>("@gcx/cli/BatchResults/Header")({
  format: Schema.Literal("gcx-batch-results"),
  /** 3; 2 for a file of results only (read, and rewritten as 3). */
  version: Schema.Literals([2, 3]),
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
  /** The requestId of the POST, when one was sent. */
  requestId: Schema.optionalKey(Schema.String),
  /** The `previousAttempts` of the last POST sent, when the POST failed (a re-run sends one more). */
  previousAttempts: Schema.optionalKey(Schema.Int),
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

/** A card in flight: its POST about to be sent (`posting`), or the transaction it created (`submitted`). */
export class Progress extends Schema.Class<Progress>("@gcx/cli/BatchResults/Progress")({
  key: Schema.String,
  line: Schema.Int,
  status: Schema.Literals(["posting", "submitted"]),
  requestId: Schema.String,
  /** `posting`: the `previousAttempts` header of the POST about to be sent. */
  previousAttempts: Schema.optionalKey(Schema.Int),
  /** `submitted`: the transaction the POST answered with. */
  transactionId: Schema.optionalKey(Schema.String)
}) {}

/** A line of the results file after the header. */
export type Record = Result | Progress

/** Whether a result is final: the card is skipped on a later run. */
export const isFinal = (result: Result): boolean => result.status === "completed" || result.group === "card"

/** What a re-run does with a card, by its latest line (see the module notes); `Fresh` is also a card never seen. */
export type Resume =
  | { readonly _tag: "Finished" }
  | { readonly _tag: "Track"; readonly transactionId: string; readonly requestId: string | undefined }
  | { readonly _tag: "Repost"; readonly requestId: string; readonly previousAttempts: number }
  | { readonly _tag: "Fresh" }

const finished: Resume = { _tag: "Finished" }
const fresh: Resume = { _tag: "Fresh" }

/** What a re-run does with the card whose latest line is `record`. */
export const resumeOf = (record: Record): Resume => {
  if (record instanceof Progress) {
    return record.transactionId !== undefined
      ? { _tag: "Track", transactionId: record.transactionId, requestId: record.requestId }
      : { _tag: "Repost", requestId: record.requestId, previousAttempts: record.previousAttempts ?? 0 }
  }
  if (isFinal(record)) return finished
  if (record.transactionId !== undefined) {
    return record.error !== undefined && QuotePoller.isOutcomeUnknown(record.error)
      ? { _tag: "Track", transactionId: record.transactionId, requestId: record.requestId }
      : fresh
  }
  return record.requestId !== undefined
    ? { _tag: "Repost", requestId: record.requestId, previousAttempts: record.previousAttempts ?? 0 }
    : fresh
}

const decodeHeader = Schema.decodeUnknownOption(Schema.fromJsonString(Header))
const decodeRecord = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Union([Result, Progress])))
const encodeHeader = Schema.encodeSync(Header)
const encodeResult = Schema.encodeSync(Result)
const encodeProgress = Schema.encodeSync(Progress)

/** A record as its line, without the line break. */
export const encode = (record: Record): string =>
  Text.json(record instanceof Result ? encodeResult(record) : encodeProgress(record))

/** The header as its line, without the line break. */
export const encodeHeaderLine = (header: Header): string => Text.json(encodeHeader(header))

/** The header of a new results file for the key `keyId`. */
export const header = (keyId: string): Header => new Header({ format: "gcx-batch-results", version, keyId })

/** What a results file holds, as a re-run needs it: never its lines, one small entry per card. */
export interface Loaded {
  readonly header: Header
  /** The number of the latest line of each card (the header is line 1). */
  readonly latest: Map<string, number>
  /** What to do with each card that is not finished (`resumeOf`); the others are `Finished`. */
  readonly resume: Map<string, Resume>
  /** The number of whole lines, the header's included. */
  readonly lines: number
  /** Whether the file must be rewritten before lines are appended: a torn last line, or an older version. */
  readonly rewrite: boolean
}

/** What a re-run does with the card `key` of a loaded file (`Fresh` when the file has none of it). */
export const resumeFor = (loaded: Option.Option<Loaded>, key: string): Resume =>
  Option.match(loaded, {
    onNone: () => fresh,
    onSome: ({ latest, resume }) => resume.get(key) ?? (latest.has(key) ? finished : fresh)
  })

/** Where results are written: the real path behind `--out`, and what it holds already. */
export interface Target {
  readonly path: string
  readonly loaded: Option.Option<Loaded>
}

const refused = (out: string, why: string) =>
  new CliError({ code: ExitCode.Usage, message: `--out ${Text.safe(out)} ${why}` })

/**
 * Reads the results file at `path`, streamed: `None` when it is empty; a
 * refusal when its first line is not a header or another line (but a torn
 * last one) is not a record.
 */
const load = (
  fs: FileSystem.FileSystem,
  path: string,
  out: string
): Effect.Effect<Option.Option<Loaded>, CliError | PlatformError.PlatformError> => {
  const notResults = refused(out, "has lines that are not results: it is left alone; choose another path")
  const state = {
    header: undefined as Header | undefined,
    latest: new Map<string, number>(),
    resume: new Map<string, Resume>(),
    lines: 0,
    torn: false
  }
  return BatchLines.stream(fs, path, () => notResults).pipe(
    Stream.runForEach((line) =>
      Effect.suspend(() => {
        if (!line.terminated) {
          state.torn = true
          return Effect.void
        }
        if (state.header === undefined) {
          if (line.text.trim() === "") return Effect.void
          const header = decodeHeader(line.text)
          if (Option.isNone(header)) {
            return Effect.fail(
              refused(out, "exists and is not a gcx results file: it is left alone; choose another path")
            )
          }
          state.header = header.value
          state.lines = line.number
          return Effect.void
        }
        const record = decodeRecord(line.text)
        if (Option.isNone(record)) return Effect.fail(notResults)
        const { key } = record.value
        state.latest.set(key, line.number)
        const resume = resumeOf(record.value)
        if (resume._tag === "Finished") state.resume.delete(key)
        else state.resume.set(key, resume)
        state.lines = line.number
        return Effect.void
      })
    ),
    Effect.map(() =>
      state.header === undefined
        ? Option.none()
        : Option.some({
          header: state.header,
          latest: state.latest,
          resume: state.resume,
          lines: state.lines,
          rewrite: state.torn || state.header.version !== version
        })
    )
  )
}

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
    return { path, loaded: yield* load(fs, path, out) }
  })

/** The fingerprint of a record's line, without decoding the rest (for compaction). */
export const keyOfLine = (text: string): string | undefined => {
  try {
    const key = (JSON.parse(text) as { readonly key?: unknown }).key
    return typeof key === "string" ? key : undefined
  } catch {
    return undefined
  }
}
