/**
 * `gcx batch <file> [--concurrency N] [--out results.jsonl] [--json] [--metrics-port P]`: quotes
 * every card of a CSV or JSON-lines file (`BatchFile`), `N` at a time, with
 * one progress display for the batch (`BatchDisplay`); writes one result
 * line per card to `--out` (`BatchResults`: refused when it is the batch file
 * or not a results file; written whole each time); prints a summary table:
 * completed, failures by error code, skipped, duplicates. A card is known by
 * its keyed fingerprint (`BatchKey`), not its row: re-run with the same
 * `--out`, it skips the cards already finished (completed, or refused as a
 * card outcome) wherever their rows moved, and quotes the others; a
 * duplicate row is quoted once.
 *
 * Its exit code is the most serious outcome among the cards it quoted:
 * usage (2), then service failure (5), then merchant (4), then card (3);
 * 0 when every card completed. Its flags are in `commands/Batch`.
 */
import * as Errors from "@gcx/core/Errors"
import type * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as Redaction from "@gcx/core/Redaction"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import type * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import type * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import type * as Terminal from "effect/Terminal"
import * as BatchDisplay from "../BatchDisplay.js"
import * as BatchFile from "../BatchFile.js"
import * as BatchKey from "../BatchKey.js"
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

interface Pending {
  readonly row: BatchFile.Row
  /** The card's fingerprint (`BatchKey.fingerprint`). */
  readonly key: string
}

const completedResult = (pending: Pending, event: QuoteEvent.Completed) =>
  new BatchResults.Result({
    ...cardFields(pending),
    status: "completed",
    transactionId: event.quote.transactionId,
    actualCardValue: event.quote.actualCardValue,
    exchangeCardValue: event.quote.exchangeCardValue,
    finishedAt: event.timestamp
  })

const failedResult = (
  pending: Pending,
  error: Errors.QuoteFailure,
  transactionId: string | undefined,
  finishedAt: DateTime.Utc
) =>
  new BatchResults.Result({
    ...cardFields(pending),
    status: "failed",
    ...(transactionId === undefined ? {} : { transactionId }),
    group: Errors.groupOf(error),
    error: error._tag,
    ...("errorCode" in error && error.errorCode !== undefined ? { errorCode: error.errorCode } : {}),
    ...Option.match(Errors.customerMessage(error), { onNone: () => ({}), onSome: (userMessage) => ({ userMessage }) }),
    message: error.message,
    finishedAt
  })

/** The fields of a result that say which card it is. */
const cardFields = ({ key, row }: Pending) => ({
  key,
  line: row.line,
  card: Redaction.maskCardNumber(row.card.cardNumber),
  productLineId: row.card.productLineId
})

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

/** A finished card: its result line, and its error unless it completed. */
interface Outcome {
  readonly result: BatchResults.Result
  readonly error: Option.Option<Errors.QuoteFailure>
}

/** The outcome an item of the batch stream gives, if it ends its card. */
const outcomeOf = (
  pending: ReadonlyArray<Pending>,
  item: QuotePoller.BatchEvent
): Effect.Effect<Option.Option<Outcome>> => {
  const card = pending[item.index]!
  if (item._tag === "Rejected") {
    return Effect.map(
      DateTime.now,
      (now) => Option.some({ result: failedResult(card, item.error, undefined, now), error: Option.some(item.error) })
    )
  }
  const event = item.event
  switch (event._tag) {
    case "Completed":
      return Effect.succeedSome({ result: completedResult(card, event), error: Option.none() })
    case "Failed":
      return Effect.succeedSome({
        result: failedResult(card, event.error, event.transactionId, event.timestamp),
        error: Option.some(event.error)
      })
    default:
      return Effect.succeedNone
  }
}

/** Adds a finished card to the summary. */
const count = (summary: Summary, { error, result }: Outcome): Summary =>
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

/**
 * Quotes a batch file: skips the cards `--out` says are finished (found by
 * content, wherever their row is now), quotes each other card once, records
 * each outcome as it comes, and prints the summary.
 */
export const run = (
  input: Input
): Effect.Effect<
  Summary,
  PlatformError.PlatformError | ExitCode.CliError | BatchKey.BatchKeyError | Config.ConfigError,
  QuotePoller.QuotePoller | FileSystem.FileSystem | Terminal.Terminal | Stdio.Stdio
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const poller = yield* QuotePoller.QuotePoller
    const rows = yield* Effect.fromResult(BatchFile.parse(yield* fs.readFileString(input.file)))
    const target = yield* Effect.transposeOption(Option.map(input.out, (out) => BatchResults.target(input.file, out)))
    const loaded = Option.flatMap(target, (target) => target.loaded)
    const key = yield* Option.match(target, {
      onNone: () => BatchKey.ephemeral,
      onSome: (target) => BatchKey.resolve(target.path, Option.map(loaded, ({ header }) => header.keyId))
    })
    const { duplicates, unique } = BatchFile.distinct(
      rows.map((row): Pending => ({ row, key: BatchKey.fingerprint(key, row) }))
    )
    const mode = yield* Render.mode(input.json)
    // with --json, stdout holds only the result lines
    const say = mode === "json" ? Console.error : Console.log

    const earlier = Option.match(loaded, { onNone: () => [], onSome: ({ results }) => results })
    const finished = new Set(earlier.filter(BatchResults.isFinal).map((result) => result.key))
    const pending = unique.filter((card) => !finished.has(card.key))
    const writer = yield* Effect.transposeOption(Option.map(
      target,
      (target) =>
        BatchResults.writer(
          target.path,
          new BatchResults.Header({ format: "gcx-batch-results", version: 2, keyId: BatchKey.id(key) }),
          earlier
        )
    ))
    const skipped = unique.length - pending.length
    yield* say(
      `batch: ${rows.length} card(s) from ${Text.safe(input.file)}` +
        (skipped > 0 ? `, ${skipped} finished earlier (skipped)` : "") +
        (duplicates.length > 0 ? `, ${duplicates.length} duplicate row(s) (quoted once)` : "") +
        `, ${input.concurrency} at a time` +
        Option.match(input.out, { onNone: () => "", onSome: (out) => `, results in ${Text.safe(out)}` })
    )
    for (const { firstLine, line } of duplicates) {
      yield* say(`line ${line}: the same card as line ${firstLine}, quoted once`)
    }

    const initial: Summary = {
      total: rows.length,
      skipped,
      duplicates: duplicates.length,
      completed: 0,
      failures: new Map(),
      code: ExitCode.ExitCode.Completed
    }
    const summary = yield* Effect.scoped(Effect.gen(function*() {
      const display = mode === "json" ? undefined : yield* BatchDisplay.make(mode, pending.length)
      const record = ({ error, result }: Outcome) =>
        Effect.andThen(
          Option.match(writer, { onNone: () => Effect.void, onSome: (writer) => writer.record(result) }),
          display === undefined
            ? Console.log(BatchResults.encode(result))
            : display.finished(outcomeLine(result), Option.isNone(error))
        )
      // the batch display moves per card: the schedule need not follow the progress bar's pace
      const track = Polling.trackOptions(input, mode === "bar" ? "lines" : mode)
      return yield* poller.quoteAll(pending.map((card) => card.row.card), { ...track, concurrency: input.concurrency })
        .pipe(
          Stream.mapEffect((item) => outcomeOf(pending, item)),
          Stream.filter(Option.isSome),
          Stream.map((outcome) => outcome.value),
          Stream.tap(record),
          Stream.runFold(() => initial, count)
        )
    }))
    yield* say(`summary\n${summaryTable(summary)}`)
    return summary
  })

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
  run(input).pipe(
    Effect.flatMap((summary) =>
      summary.code === ExitCode.ExitCode.Completed
        ? Effect.void
        : Effect.fail(new ExitCode.ExitWith({ code: summary.code }))
    ),
    Effect.provide(durable ? Durable.pollerLayer(connection) : Connection.pollerLayer(connection)),
    Effect.provide(Telemetry.prometheus(metricsPort))
  )
