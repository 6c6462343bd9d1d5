/**
 * `gcx batch <file> [--concurrency N] [--out results.jsonl] [--json]`: quotes
 * every card of a CSV or JSON-lines file (`BatchFile`), `N` at a time, with
 * one progress display for the batch; writes one result line per card to
 * `--out` (`BatchResults`); prints a summary table: completed, and failures
 * by error code. Re-run with the same `--out`, it skips the cards already
 * finished (completed, or refused as a card outcome) and retries the others.
 *
 * Its exit code is the most serious outcome among the cards it quoted:
 * usage (2), then service failure (5), then merchant (4), then card (3);
 * 0 when every card completed.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type * as PlatformError from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import type * as Terminal from "@effect/platform/Terminal"
import * as Errors from "@gcx/core/Errors"
import type * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as Redaction from "@gcx/core/Redaction"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as BatchFile from "../BatchFile.js"
import * as BatchResults from "../BatchResults.js"
import * as Connection from "../Connection.js"
import * as Durable from "../Durable.js"
import * as ExitCode from "../ExitCode.js"
import * as Polling from "../Polling.js"
import * as Render from "../Render.js"

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
  readonly completed: number
  /** Failures by error code (the error's tag when it has no code). */
  readonly failures: ReadonlyMap<string, number>
  /** The most serious outcome among the cards quoted (see the module notes). */
  readonly code: ExitCode.ExitCode
}

interface Pending {
  readonly row: BatchFile.Row
  readonly index: number
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
const cardFields = ({ index, key, row }: Pending) => ({
  index,
  line: row.line,
  key,
  card: Redaction.maskCardNumber(row.card.cardNumber),
  productLineId: row.card.productLineId
})

/** One line describing a card's outcome, for the display. */
const outcomeLine = (result: BatchResults.Result): string =>
  result.status === "completed"
    ? `${result.card}  completed  actual ${Render.money(result.actualCardValue!)}  exchange ${
      Render.money(result.exchangeCardValue!)
    }`
    : `${result.card}  failed  ${result.error}${result.errorCode === undefined ? "" : ` ${result.errorCode}`}: ${
      result.userMessage ?? result.message ?? ""
    }`

/** The summary as a table: completed, each failure code, skipped, total. */
export const summaryTable = (summary: Summary): string =>
  Render.table([
    ["completed", summary.completed],
    ...[...summary.failures.entries()].sort(([a], [b]) => a.localeCompare(b)),
    ...(summary.skipped > 0 ? [["skipped (finished earlier)", summary.skipped] as const] : []),
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
 * Quotes a batch file: skips the cards `--out` says are finished, quotes the
 * others, records each outcome as it comes, and prints the summary.
 */
export const run = (
  input: Input
): Effect.Effect<
  Summary,
  PlatformError.PlatformError | ExitCode.CliError,
  QuotePoller.QuotePoller | ExchangeConfig.ExchangeConfig | FileSystem.FileSystem | Terminal.Terminal
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const poller = yield* QuotePoller.QuotePoller
    const config = yield* ExchangeConfig.ExchangeConfig
    const rows = yield* BatchFile.parse(yield* fs.readFileString(input.file))
    const cards = rows.map((row, index): Pending => ({
      row,
      index,
      key: BatchResults.key(config.clientSecret, index, row)
    }))
    const mode = yield* Render.mode(input.json)
    // with --json, stdout holds only the result lines
    const say = mode === "json" ? Console.error : Console.log

    let pending = cards
    if (Option.isSome(input.out)) {
      const loaded = yield* BatchResults.load(input.out.value)
      if (loaded.unreadable > 0) {
        yield* Console.error(`gcx: ${loaded.unreadable} unreadable line(s) of ${input.out.value} ignored`)
      }
      const finished = new Set(loaded.results.filter(BatchResults.isFinal).map((result) => result.key))
      const retried = new Set(cards.map((card) => card.key))
      // keep the final lines; drop the lines of the cards quoted again, which get a new one
      yield* BatchResults.rewrite(
        input.out.value,
        loaded.results.filter((result) => BatchResults.isFinal(result) || !retried.has(result.key))
      )
      pending = cards.filter((card) => !finished.has(card.key))
    }
    const skipped = cards.length - pending.length
    yield* say(
      `batch: ${cards.length} card(s) from ${input.file}` +
        (skipped > 0 ? `, ${skipped} finished earlier (skipped)` : "") +
        `, ${input.concurrency} at a time` +
        Option.match(input.out, { onNone: () => "", onSome: (out) => `, results in ${out}` })
    )

    const summary = yield* Effect.scoped(Effect.gen(function*() {
      const display = mode === "json" ? undefined : yield* Render.batch(mode, pending.length)
      const record = ({ error, result }: Outcome) =>
        Effect.zipRight(
          Option.match(input.out, { onNone: () => Effect.void, onSome: (out) => BatchResults.append(out, result) }),
          display === undefined
            ? Console.log(BatchResults.encode(result))
            : display.finished(outcomeLine(result), Option.isNone(error))
        )
      // the batch display moves per card: the schedule need not follow the progress bar's pace
      const track = Polling.trackOptions(input, mode === "bar" ? "lines" : mode)
      return yield* poller.quoteAll(pending.map((card) => card.row.card), { ...track, concurrency: input.concurrency })
        .pipe(
          Stream.mapEffect((item) => outcomeOf(pending, item)),
          Stream.filterMap((outcome) => outcome),
          Stream.tap(record),
          Stream.runFold(
            { total: cards.length, skipped, completed: 0, failures: new Map(), code: ExitCode.ExitCode.Completed },
            count
          )
        )
    }))
    yield* say(`summary\n${summaryTable(summary)}`)
    return summary
  })

/** The `batch` command. */
export const command = Command.make(
  "batch",
  {
    file: Args.file({ name: "file", exists: "yes" }).pipe(
      Args.withDescription("CSV (header cardNumber,pinNumber,productLineId) or JSON lines with those fields")
    ),
    concurrency: Options.integer("concurrency").pipe(
      Options.withPseudoName("n"),
      Options.withSchema(Schema.Int.pipe(Schema.positive())),
      Options.withDescription("how many cards are quoted at a time (default 4)"),
      Options.withDefault(4)
    ),
    out: Options.file("out").pipe(
      Options.withPseudoName("results.jsonl"),
      Options.withDescription("results file, one JSON line per card; re-running with it skips finished cards"),
      Options.optional
    ),
    json: Options.boolean("json").pipe(
      Options.withDescription("print each card's result line on stdout instead of the progress display")
    ),
    ...Polling.options,
    durable: Durable.flag,
    connection: Connection.options
  },
  ({ connection, durable, ...input }) =>
    run(input).pipe(
      Effect.flatMap((summary) =>
        summary.code === ExitCode.ExitCode.Completed
          ? Effect.void
          : Effect.fail(new ExitCode.ExitWith({ code: summary.code }))
      ),
      Effect.provide(durable ? Durable.pollerLayer(connection) : Connection.pollerLayer(connection))
    )
).pipe(Command.withDescription("Quote every card of a CSV or JSON-lines file"))
