/**
 * `gcx batch <file> [--concurrency N] [--out results.jsonl] [--json] [--metrics-port P]`: quotes
 * every card of a CSV or JSON-lines file (`BatchFile`), `N` at a time, with
 * one progress display for the batch (`BatchDisplay`); appends each card's
 * lines to `--out` in group commits and compacts it at the end (`BatchLog`,
 * `BatchResults`: refused when it is the batch file or not a results file);
 * prints a summary table: completed, failures by error code, skipped,
 * duplicates. A card is known by its keyed fingerprint (`BatchKey`), not its
 * row: re-run with the same `--out`, it skips the cards already finished
 * (completed, or refused as a card outcome) wherever their rows moved, tracks
 * those whose transaction is known, POSTs again with the same requestId those
 * that were being POSTed (`BatchCards`), and quotes the others; a duplicate
 * row is quoted once.
 *
 * The batch file is read twice, streamed: a first pass checks every line
 * and counts the cards (a bad line is an error before any quote), the second
 * quotes them. Memory holds a fingerprint per distinct card (about 100
 * bytes), never the file.
 *
 * Its exit code is the most serious outcome among the cards it quoted:
 * usage (2), then service failure (5), then merchant (4), then card (3);
 * 0 when every card completed. Its flags are in `commands/Batch`.
 */
import * as QuotePoller from "@gcx/poller/QuotePoller"
import type * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import type * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import type * as Terminal from "effect/Terminal"
import * as BatchCards from "../BatchCards.js"
import * as BatchDisplay from "../BatchDisplay.js"
import * as BatchFile from "../BatchFile.js"
import * as BatchKey from "../BatchKey.js"
import * as BatchLog from "../BatchLog.js"
import * as BatchResults from "../BatchResults.js"
import * as Connection from "../Connection.js"
import * as Durable from "../Durable.js"
import * as ExitCode from "../ExitCode.js"
import * as Polling from "../Polling.js"
import * as Render from "../Render.js"
import * as Telemetry from "../Telemetry.js"
import * as Text from "../Text.js"

/** What to quote and how. */
export interface Input extends Polling.Flags {
  readonly file: string
  readonly concurrency: number
  readonly out: Option.Option<string>
  readonly json: boolean
}

/** What a batch did. */
export interface Summary {
  readonly total: number
  readonly skipped: number
  /** Rows whose card appeared on an earlier row (quoted once). */
  readonly duplicates: number
  readonly completed: number
  /** Failures by error code (the error's tag when it has no code). */
  readonly failures: ReadonlyMap<string, number>
  /** The most serious outcome among the cards quoted (see the module notes). */
  readonly code: ExitCode.ExitCode
}

/** One line describing a card's outcome, for the display. */
const outcomeLine = (result: BatchResults.Result): string =>
  Text.safe(
    result.status === "completed"
      ? `${result.card}  completed  actual ${Render.money(result.actualCardValue!)}  exchange ${
        Render.money(result.exchangeCardValue!)
      }`
      : `${result.card}  failed  ${result.error}${result.errorCode === undefined ? "" : ` ${result.errorCode}`}: ${
        result.userMessage ?? result.message ?? ""
      }`
  )

/** The summary as a table: completed, each failure code, skipped, total. */
export const summaryTable = (summary: Summary): string =>
  Render.table([
    ["completed", summary.completed],
    ...[...summary.failures.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) =>
      [Text.safe(name), n] as const
    ),
    ...(summary.skipped > 0 ? [["skipped (finished earlier)", summary.skipped] as const] : []),
    ...(summary.duplicates > 0 ? [["duplicate rows (quoted once)", summary.duplicates] as const] : []),
    ["total", summary.total]
  ])

/** Adds a finished card to the summary. */
const count = (summary: Summary, { error, result }: BatchCards.Outcome): Summary =>
  Option.match(error, {
    onNone: () => ({ ...summary, completed: summary.completed + 1 }),
    onSome: (error) => {
      const name = result.errorCode ?? error._tag
      return {
        ...summary,
        failures: new Map(summary.failures).set(name, (summary.failures.get(name) ?? 0) + 1),
        code: ExitCode.worst(summary.code, ExitCode.ofQuoteFailure(error))
      }
    }
  })

/** How many duplicate rows are listed one by one; the rest are counted. */
const listedDuplicates = 100

/** What the first pass over the batch file finds. */
interface Scan {
  readonly rows: number
  /** The fingerprint of each row to quote, by its rank among the rows (from 0); none for the others. */
  readonly quoted: Array<string | undefined>
  /** Duplicate rows (the first `listedDuplicates`), and how many there are. */
  readonly duplicates: Array<{ readonly line: number; readonly firstLine: number }>
  duplicateCount: number
  skipped: number
  pending: number
}

/** The first pass: every line checked, each card's fingerprint, the duplicates and what is left to quote. */
const scan = (
  file: string,
  fingerprint: (row: BatchFile.Row) => string,
  loaded: Option.Option<BatchResults.Loaded>
) => {
  // the first line of each distinct card, by fingerprint
  const first = new Map<string, number>()
  return BatchFile.rows(file).pipe(
    Stream.runFold(
      (): Scan & { rows: number } => ({
        rows: 0,
        quoted: [],
        duplicates: [],
        duplicateCount: 0,
        skipped: 0,
        pending: 0
      }),
      (scan, row) => {
        scan.rows += 1
        const key = fingerprint(row)
        const firstLine = first.get(key)
        let quoted: string | undefined
        if (firstLine !== undefined) {
          scan.duplicateCount += 1
          if (scan.duplicates.length < listedDuplicates) scan.duplicates.push({ line: row.line, firstLine })
        } else {
          first.set(key, row.line)
          if (BatchResults.resumeFor(loaded, key)._tag === "Finished") scan.skipped += 1
          else {
            scan.pending += 1
            quoted = key
          }
        }
        scan.quoted.push(quoted)
        return scan
      }
    )
  )
}

/** A batch checked and counted (`prepare`), ready to be quoted (`quote`). */
export interface Prepared {
  readonly input: Input
  readonly target: Option.Option<BatchResults.Target>
  readonly loaded: Option.Option<BatchResults.Loaded>
  readonly key: BatchKey.BatchKey
  readonly found: Scan
  readonly mode: Render.Mode
  /** Says a line of the batch's own (on stderr with `--json`, whose stdout holds only the result lines). */
  readonly say: (line: string) => Effect.Effect<void>
}

/**
 * The batch's first pass, before any quote and before the poller's layer is
 * built: the results file and its key, every line of the batch file checked,
 * each card's fingerprint, the duplicates and the cards finished earlier. A
 * file refused here leaves no key file behind, and opens no database.
 */
export const prepare = (
  input: Input
): Effect.Effect<
  Prepared,
  PlatformError.PlatformError | ExitCode.CliError | BatchKey.BatchKeyError | Config.ConfigError,
  FileSystem.FileSystem | Terminal.Terminal | Stdio.Stdio
> =>
  Effect.gen(function*() {
    const target = yield* Effect.transposeOption(Option.map(input.out, (out) => BatchResults.target(input.file, out)))
    const loaded = Option.flatMap(target, (target) => target.loaded)
    const key = yield* Option.match(target, {
      onNone: () => BatchKey.ephemeral,
      onSome: (target) => BatchKey.resolve(target.path, Option.map(loaded, ({ header }) => header.keyId))
    })
    // a file refused before any quote leaves no key file behind
    const found = yield* scan(input.file, (row) => BatchKey.fingerprint(key, row), loaded).pipe(
      Effect.onError(() => BatchKey.discardCreated(key))
    )
    const mode = yield* Render.mode(input.json)
    const say = mode === "json" ? Console.error : Console.log
    return { input, target, loaded, key, found, mode, say }
  })

/**
 * Quotes a prepared batch: skips the cards `--out` says are finished (found by
 * content, wherever their row is now), quotes each other card once, records
 * each outcome as it comes, compacts the results file, and prints the
 * summary.
 */
export const quote = (
  { found, input, key, loaded, mode, say, target }: Prepared
): Effect.Effect<
  Summary,
  PlatformError.PlatformError | ExitCode.CliError,
  QuotePoller.QuotePoller | FileSystem.FileSystem | Terminal.Terminal | Stdio.Stdio
> =>
  Effect.gen(function*() {
    const poller = yield* QuotePoller.QuotePoller
    yield* say(
      `batch: ${found.rows} card(s) from ${Text.safe(input.file)}` +
        (found.skipped > 0 ? `, ${found.skipped} finished earlier (skipped)` : "") +
        (found.duplicateCount > 0 ? `, ${found.duplicateCount} duplicate row(s) (quoted once)` : "") +
        `, ${input.concurrency} at a time` +
        Option.match(input.out, { onNone: () => "", onSome: (out) => `, results in ${Text.safe(out)}` })
    )
    for (const { firstLine, line } of found.duplicates) {
      yield* say(`line ${line}: the same card as line ${firstLine}, quoted once`)
    }
    if (found.duplicateCount > found.duplicates.length) {
      yield* say(`… and ${found.duplicateCount - found.duplicates.length} more duplicate row(s)`)
    }

    const initial: Summary = {
      total: found.rows,
      skipped: found.skipped,
      duplicates: found.duplicateCount,
      completed: 0,
      failures: new Map(),
      code: ExitCode.ExitCode.Completed
    }
    const summary = yield* Effect.scoped(Effect.gen(function*() {
      const log = yield* Effect.transposeOption(Option.map(
        target,
        (target) => BatchLog.make(target.path, BatchResults.header(BatchKey.id(key)), loaded)
      ))
      const display = mode === "json" ? undefined : yield* BatchDisplay.make(mode, found.pending)
      const record = ({ error, result }: BatchCards.Outcome) =>
        Effect.andThen(
          Option.match(log, { onNone: () => Effect.void, onSome: (log) => log.append(result) }),
          display === undefined
            ? Console.log(BatchResults.encode(result))
            : display.finished(outcomeLine(result), Option.isNone(error))
        )
      // the batch display moves per card: the schedule need not follow the progress bar's pace
      const context: BatchCards.Context = {
        poller,
        log,
        track: Polling.trackOptions(input, mode === "bar" ? "lines" : mode)
      }
      // each card once (its first row), unless it finished earlier: the rows the first pass kept
      const summary = yield* BatchFile.rows(input.file).pipe(
        Stream.zipWithIndex,
        Stream.filter(([, rank]) => found.quoted[rank] !== undefined),
        Stream.map(([row, rank]): BatchCards.Pending => ({ row, key: found.quoted[rank]! })),
        Stream.mapEffect((card) => BatchCards.quote(context, card, BatchResults.resumeFor(loaded, card.key)), {
          concurrency: input.concurrency,
          unordered: true
        }),
        Stream.tap(record),
        Stream.runFold(() => initial, count)
      )
      if (Option.isSome(log)) yield* log.value.compact
      return summary
    }))
    yield* say(`summary\n${summaryTable(summary)}`)
    return summary
  })

/** `prepare`, then `quote`, with the `QuotePoller` in context. */
export const run = (
  input: Input
): Effect.Effect<
  Summary,
  PlatformError.PlatformError | ExitCode.CliError | BatchKey.BatchKeyError | Config.ConfigError,
  QuotePoller.QuotePoller | FileSystem.FileSystem | Terminal.Terminal | Stdio.Stdio
> => Effect.flatMap(prepare(input), quote)

/** What `gcx batch` is given: its argument and flags (`commands/Batch`). */
export interface Flags extends Input {
  readonly metricsPort: Option.Option<number>
  readonly durable: boolean
  readonly connection: Connection.Flags
}

/**
 * The `batch` command's handler: the batch of the flags, on the connection (or `--durable`) they
 * give, with `--metrics-port`; it fails with the batch's exit code unless every card completed.
 */
export const handler = ({ connection, durable, metricsPort, ...input }: Flags) =>
  Effect.gen(function*() {
    // the batch file is checked before the poller's layer opens a database or a connection
    const prepared = yield* prepare(input)
    const layer = durable ? Durable.pollerLayer(connection) : Connection.pollerLayer(connection)
    const summary = yield* Effect.scoped(Effect.gen(function*() {
      // a deployment refused before any quote leaves no new key file behind either
      const context = yield* Layer.build(layer).pipe(Effect.onError(() => BatchKey.discardCreated(prepared.key)))
      return yield* Effect.provideContext(quote(prepared), context)
    }))
    if (summary.code !== ExitCode.ExitCode.Completed) return yield* new ExitCode.ExitWith({ code: summary.code })
  }).pipe(Effect.provide(Telemetry.prometheus(metricsPort)))
