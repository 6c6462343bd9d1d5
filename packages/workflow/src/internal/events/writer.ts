/**
 * The writer of the event log, on each node that runs quotes: every event of
 * its `QuoteEvents` bus, mapped to its quote's requestId, and the terminal
 * event of every outcome its workflows reach, inserted in batches (one
 * transaction per batch, at most one per `interval` unless an outcome waits).
 *
 * - The bus names the transaction, not the quote, except `Submitted` (and a
 *   `Retrying` of the POST): the writer learns each quote's transaction from
 *   `Submitted`, and from `QuoteWorkflow.QuoteTransactions`, told on every run
 *   (after a restart a replayed submission publishes no `Submitted`). An
 *   event of a transaction it does not know is not recorded.
 * - The terminal event is recorded from `QuoteWorkflow.QuoteOutcomes` (the
 *   bus's is skipped), and the workflow waits for its commit before the
 *   engine stores the outcome: a process that dies in between tells it again
 *   on replay (at least once; recorded once, see `table.insert`). The events
 *   the bus had before it go first in the batch.
 * - Each committed batch wakes the readers of the same database in this
 *   process at once, handing them the entries committed (`commits.ts`). On
 *   PostgreSQL it is also announced on `channel` (`pg_notify` of the
 *   requestIds, in the batch's transaction: delivered at its commit), for the
 *   readers of every node.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Stream from "effect/Stream"
import * as EventRelay from "../../EventRelay.js"
import type * as QuoteWorkflow from "../../QuoteWorkflow.js"
import * as PgClient from "../pg/PgClient.js"
import * as Commits from "./commits.js"
import * as Table from "./table.js"

/** The PostgreSQL channel on which writers announce the quotes whose events they committed. */
export const channel = "gcx_quote_events"

/** Settings of the writer. */
export interface Options {
  /** How long events wait to be written with others (an outcome never waits). Default 50 ms. */
  readonly interval?: Duration.Input | undefined
}

/** The writer: what the workflow tells it (see `QuoteWorkflow.QuoteOutcomes` and `QuoteTransactions`). */
export interface Writer {
  /** Records the outcome's terminal event, and waits for its commit. */
  readonly record: (outcome: QuoteWorkflow.Outcome) => Effect.Effect<void>
  /** Learns the quote of a transaction. */
  readonly submitted: (requestId: string, transactionId: string) => Effect.Effect<void>
}

interface Item {
  readonly requestId: string
  readonly event: QuoteEvent.QuoteEvent
  /** Set for an outcome's terminal event: completed once the batch that holds it is committed (or given up). */
  readonly done: Deferred.Deferred<void> | undefined
}

/** A failed batch is tried again this long (a short database outage loses no event), then given up with a log. */
const retry = Schedule.min([Schedule.exponential("50 millis"), Schedule.spaced("5 seconds")]).pipe(
  Schedule.upTo({ duration: "2 minutes" })
)

/** The terminal event of an outcome; none for an interruption or a defect (no outcome yet). */
const terminalOf = (outcome: QuoteWorkflow.Outcome, timestamp: DateTime.Utc): QuoteEvent.Terminal | undefined => {
  if (Exit.isSuccess(outcome.exit)) {
    const quote = outcome.exit.value
    return new QuoteEvent.Completed({ transactionId: quote.transactionId, timestamp, quote }, { disableChecks: true })
  }
  const error = Cause.findErrorOption(outcome.exit.cause)
  if (Option.isNone(error)) return undefined
  return new QuoteEvent.Failed(
    { transactionId: outcome.transactionId ?? "", timestamp, error: error.value },
    { disableChecks: true }
  )
}

/** The announcements of a batch: its requestIds, comma-separated, each payload under PostgreSQL's limit. */
const announcements = (requestIds: Iterable<string>): Array<string> => {
  const out: Array<string> = []
  let current = ""
  for (const requestId of requestIds) {
    if (current.length + requestId.length + 1 > EventRelay.maxPayloadBytes) {
      out.push(current)
      current = ""
    }
    current = current === "" ? requestId : `${current},${requestId}`
  }
  if (current !== "") out.push(current)
  return out
}

/** Builds the writer over the `SqlClient` and the bus in context (see the module notes); it runs until the scope closes. */
export const make = (
  options: Options = {}
): Effect.Effect<Writer, SqlError.SqlError, SqlClient.SqlClient | QuoteEvents.QuoteEvents | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* Effect.serviceOption(PgClient.PgClient)
    const interval = Duration.fromInputUnsafe(options.interval ?? "50 millis")
    yield* Table.create(sql)
    const queue = yield* Queue.unbounded<Item>()
    const urgent = yield* Queue.sliding<void>(1)
    /** The quote of each transaction in flight on this node. */
    const quotes = new Map<string, string>()

    const requestIdOf = (event: QuoteEvent.QuoteEvent): string | undefined => {
      if (event._tag === "Submitted") {
        quotes.set(event.transactionId, event.requestId)
        return event.requestId
      }
      if (event._tag === "Retrying" && event.requestId !== undefined) return event.requestId
      if (QuoteEvent.isTerminal(event)) {
        // recorded from the outcome (`record`), which the workflow awaits: once, not twice
        quotes.delete(event.transactionId)
        return undefined
      }
      return quotes.get(event.transactionId)
    }

    const events = yield* Effect.flatMap(QuoteEvents.QuoteEvents, (bus) => bus.subscribe)
    yield* events.pipe(
      Stream.runForEachArray((batch) =>
        Effect.sync(() => {
          for (const event of batch) {
            const requestId = requestIdOf(event)
            if (requestId !== undefined) {
              Queue.offerUnsafe(queue, { requestId, event: Table.recorded(event), done: undefined })
            }
          }
        })
      ),
      Effect.forkScoped
    )

    // in the batch's transaction: PostgreSQL delivers the announcement at its commit, with no transaction of its own
    const announce = (requestIds: Iterable<string>) =>
      Option.isNone(pg) ? Effect.void : Effect.forEach(
        announcements(requestIds),
        (payload) => sql`SELECT pg_notify(${channel}, ${payload})`,
        { discard: true }
      )

    // committed: the readers in this process are handed the entries at once (`Commits`); the others, by `NOTIFY` or their poll
    const write = (items: ReadonlyArray<Item>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const batch = new Map<string, Array<Table.Entry>>()
        for (const item of items) batch.set(item.requestId, [])
        return sql.withTransaction(
          Effect.forEach(items, (item) =>
            Effect.map(Table.insert(sql, item.requestId, item.event, now), (seq) => {
              if (seq !== undefined) batch.get(item.requestId)!.push({ seq, event: item.event })
            }), { discard: true }).pipe(Effect.andThen(announce(batch.keys())))
        ).pipe(Effect.andThen(Effect.sync(() => Commits.committed(sql, batch))))
      }).pipe(
        Effect.retry(retry),
        Effect.catchCause((cause) => Effect.logError(`could not record ${items.length} quote events`, cause))
      )

    const flush = Effect.gen(function*() {
      const first = yield* Queue.takeAll(queue)
      if (!first.some((item) => item.done !== undefined)) {
        yield* Effect.raceFirst(Effect.sleep(interval), Queue.take(urgent))
      }
      // let the bus hand over what was published before an outcome (the quote's last progress)
      yield* Effect.yieldNow
      const items = [...first, ...(yield* Queue.clear(queue))]
      yield* Queue.clear(urgent)
      // outcomes last: a quote's events from the bus come before its terminal event
      const outcomes = items.filter((item) => item.done !== undefined)
      const batch = outcomes.length === 0 ? items : [...items.filter((item) => item.done === undefined), ...outcomes]
      yield* write(batch)
      for (const item of outcomes) {
        quotes.delete(item.event.transactionId)
        Deferred.doneUnsafe(item.done!, Effect.void)
      }
    })
    yield* flush.pipe(Effect.forever, Effect.forkScoped)

    const record: Writer["record"] = (outcome) =>
      Effect.gen(function*() {
        const event = terminalOf(outcome, yield* DateTime.now)
        if (event === undefined) return
        const done = yield* Deferred.make<void>()
        Queue.offerUnsafe(queue, { requestId: outcome.requestId, event, done })
        Queue.offerUnsafe(urgent, undefined)
        yield* Deferred.await(done)
      })

    const submitted: Writer["submitted"] = (requestId, transactionId) =>
      Effect.sync(() => {
        quotes.set(transactionId, requestId)
      })

    return { record, submitted }
  })
