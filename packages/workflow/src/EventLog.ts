/**
 * The events of durable quotes, kept in the deployment's database by the node
 * that runs each quote, in order, each with its sequence number within its
 * quote: what lets any node (a gateway behind a load balancer) show a quote's
 * progress, and resume a dropped event stream without a gap or a repeat.
 *
 * - The table `gcx_quote_events (request_id, seq, tag, event_json,
 *   recorded_at)`, primary key `(request_id, seq)`, on SQLite and PostgreSQL.
 *   No card data in a row: `Submitted` is kept without its masked card.
 * - `layerWriter`, on every node that runs quotes (`DurableQuotes.layerRunner`
 *   includes it: `Embedded.layerQuotes`, `Runner.layerQuotes`): the events of
 *   the node's `QuoteEvents` bus, batched (a transaction per 50 ms, sooner when an outcome waits),
 *   and each outcome's terminal event, committed before the engine stores the
 *   outcome (at least once; recorded once). See `internal/events/writer.ts`.
 * - `layer`, on any node that reads: `read`, and `follow`, which reads the
 *   recorded events, then each new one as it is recorded: handed over at the
 *   commit by the writer of the same process and database (no read); read
 *   when woken by `NOTIFY` on the writers' channel `gcx_quote_events` on
 *   PostgreSQL, and on SQLite by one poll of the table every 100 ms per node
 *   (a fallback: the file is locked to one process), never a query loop per
 *   stream.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import type * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Stream from "effect/Stream"
import * as Table from "./internal/events/table.js"
import * as Wakeups from "./internal/events/wakeups.js"
import * as Writer from "./internal/events/writer.js"
import * as PgClient from "./internal/pg/PgClient.js"
import * as QuoteWorkflow from "./QuoteWorkflow.js"

/** An event of a quote and its sequence number within the quote (1, 2, …). */
export interface Entry {
  readonly seq: number
  readonly event: QuoteEvent.QuoteEvent
}

/** The event log service. */
export interface Service {
  /** The events of quote `requestId` recorded so far after `afterSeq` (0: all), in order. */
  readonly read: (requestId: string, afterSeq: number) => Effect.Effect<ReadonlyArray<Entry>, SqlError.SqlError>
  /**
   * The events of quote `requestId` after `afterSeq`: those recorded, then
   * each as it is recorded, in order, none twice; ends after the terminal one.
   */
  readonly follow: (requestId: string, afterSeq: number) => Stream.Stream<Entry, SqlError.SqlError>
  /**
   * What `follow` is made of, for a caller that waits on something else too
   * (the gateway's keep-alive): a cursor over quote `requestId`'s events
   * after `afterSeq`, watching the quote until the scope closes.
   */
  readonly cursor: (requestId: string, afterSeq: number) => Effect.Effect<Cursor, never, Scope.Scope>
}

/** A cursor over a quote's events (see `Service.cursor`). */
export interface Cursor {
  /**
   * The next events known now, without waiting: those recorded up to and
   * including the terminal one, `[]` when there is none yet, `undefined` after
   * the end. The first reads the table; the others read it only when
   * something but this process's writer woke the cursor (whose commits are
   * handed over), after `wake`, after a gap, and after a read that failed.
   */
  readonly poll: Effect.Effect<ReadonlyArray<Entry> | undefined, SqlError.SqlError>
  /**
   * The next events, in order, none twice, waiting for some: those up to and
   * including the terminal one, then `undefined` (the end); `[]` when `wake`
   * was called and nothing new had to be read.
   */
  readonly next: Effect.Effect<ReadonlyArray<Entry> | undefined, SqlError.SqlError>
  /**
   * Makes the waiting `next` (or the next one to wait) return `[]` without
   * reading; the `poll` or `next` after it reads the table (a wake-up missed
   * costs one call, not the rest of the quote).
   */
  readonly wake: () => void
}

/**
 * The entries of `handed` after `last` when they follow it without a gap (the
 * first is `last + 1`, each the one before plus one; `[]` when none is after
 * `last`): the cursor needs no read. `undefined` when one is missing anywhere
 * (another writer's, or committed before the watch): the cursor reads.
 */
const following = (handed: ReadonlyArray<Entry>, last: number): ReadonlyArray<Entry> | undefined => {
  const start = handed.findIndex((entry) => entry.seq > last)
  if (start < 0) return []
  if (handed[start]!.seq !== last + 1) return undefined
  const out = start === 0 ? handed : handed.slice(start)
  // a gap further on: the table has what is missing, and what follows it
  for (let i = 1; i < out.length; i++) if (out[i]!.seq !== out[i - 1]!.seq + 1) return undefined
  return out
}

/** The event log service. */
export class EventLog extends Context.Service<EventLog, Service>()("@gcx/workflow/EventLog") {}

/** The table of the event log. */
export const table = Table.table

/** The PostgreSQL channel on which writers announce the quotes whose events they committed (the requestIds, comma-separated). */
export const channel = Writer.channel

/** An event as the log keeps it: without card data (`Submitted` loses its masked card); terminal events whole. */
export const recorded = Table.recorded

/** Settings of the reader. */
export interface Options {
  /** SQLite: how often the node's one poller looks for new rows while a stream is open. Default 100 ms. */
  readonly pollInterval?: Duration.Input | undefined
}

/**
 * The event log over the `SqlClient` in context (creates the table when it is
 * missing), woken by `LISTEN` when a `PgClient` is in context, else by one
 * poller; it wakes streams until the scope closes.
 */
export const make = (
  options: Options = {}
): Effect.Effect<Service, SqlError.SqlError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* Table.create(sql)
    const pg = yield* Effect.serviceOption(PgClient.PgClient)
    const wakeups = Option.isSome(pg)
      ? yield* Wakeups.listening(pg.value, sql)
      : yield* Wakeups.polling(sql, options.pollInterval ?? "100 millis")

    const read: Service["read"] = (requestId, afterSeq) => Table.read(sql, requestId, afterSeq)

    const cursor: Service["cursor"] = (requestId, afterSeq) =>
      Effect.map(wakeups.watch(requestId), (watching) => {
        // watched first, then read (the first `take` asks for a read): an event recorded in between wakes the cursor
        let last = afterSeq
        let ended = false
        let woken = false
        /** The table must be read: woken by anything but a hand-over, a gap, or a read that failed (until one succeeds). */
        let mustRead = false
        /** The events after `last` as far as known now: handed over when they follow it, else read; `undefined` at the end. */
        const poll: Cursor["poll"] = Effect.suspend(() => {
          if (ended) return Effect.undefined
          const handed = Wakeups.take(watching)
          // a terminal event at or before `last` (a resume past it, while the quote ran): the quote has ended
          if (handed?.some((entry) => entry.seq <= last && QuoteEvent.isTerminal(entry.event))) {
            ended = true
            return Effect.undefined
          }
          const known = handed === undefined || mustRead ? undefined : following(handed, last)
          if (known !== undefined) return Effect.succeed(known.length > 0 ? advance(known) : known)
          mustRead = true
          return Effect.flatMap(read(requestId, last), (entries) => {
            if (entries.length > 0) {
              mustRead = false
              return Effect.succeed(advance(entries))
            }
            // nothing after `afterSeq` yet: ended already when its terminal event is at or before it (checked
            // at each read until an event comes: the quote may end while the cursor waits)
            if (!(last === afterSeq && afterSeq > 0)) {
              mustRead = false
              return Effect.succeed([])
            }
            return Effect.map(Table.ended(sql, requestId), (done) => {
              mustRead = false
              ended = done
              return done ? undefined : []
            })
          })
        })
        /** Moves past `entries` (not empty), up to and including the terminal one. */
        const advance = (entries: ReadonlyArray<Entry>): ReadonlyArray<Entry> => {
          const end = entries.findIndex((entry) => QuoteEvent.isTerminal(entry.event))
          const out = end >= 0 ? entries.slice(0, end + 1) : entries
          last = out[out.length - 1]!.seq
          ended = end >= 0
          return out
        }
        const next = Effect.gen(function*() {
          while (true) {
            const entries = yield* poll
            if (entries === undefined || entries.length > 0) return entries
            if (!woken) yield* watching.wait
            if (woken) {
              woken = false
              return []
            }
          }
        })
        // the keep-alive and the drain read the table once more: a wake-up missed (a NOTIFY lost) costs one tick
        const wake = () => {
          woken = true
          mustRead = true
          watching.wake()
        }
        return { poll, next, wake }
      })

    const follow: Service["follow"] = (requestId, afterSeq) =>
      Stream.unwrap(Effect.map(cursor(requestId, afterSeq), (cursor) =>
        Stream.fromPull(Effect.succeed(Effect.flatMap(cursor.next, (entries) =>
          // `[]` only after `wake`, which `follow` never calls
          entries === undefined || !Arr.isReadonlyArrayNonEmpty(entries) ? Cause.done() : Effect.succeed(entries))))))

    return EventLog.of({ read, follow, cursor })
  })

/** The event log (see `make`). */
export const layer = (options?: Options): Layer.Layer<EventLog, SqlError.SqlError, SqlClient.SqlClient> =>
  Layer.effect(EventLog, make(options))

/** Settings of the writer. */
export type WriterOptions = Writer.Options

/**
 * The writer of the node's quotes (see the module notes): provide it to the
 * `QuoteWorkflow.layer` of a node that runs quotes. It tells the workflow's
 * `QuoteOutcomes` and `QuoteTransactions`, composed with those already in
 * context (their other listeners are told as before, after the record).
 */
export const layerWriter = (
  options?: WriterOptions
): Layer.Layer<never, SqlError.SqlError, SqlClient.SqlClient | QuoteEvents.QuoteEvents> =>
  Layer.effectContext(Effect.gen(function*() {
    const writer = yield* Writer.make(options)
    const outcomes = yield* QuoteWorkflow.QuoteOutcomes
    const transactions = yield* QuoteWorkflow.QuoteTransactions
    return Context.make(QuoteWorkflow.QuoteOutcomes, {
      publish: (outcome) => Effect.andThen(writer.record(outcome), outcomes.publish(outcome))
    }).pipe(
      Context.add(QuoteWorkflow.QuoteTransactions, {
        submitted: (requestId, transactionId) =>
          Effect.andThen(writer.submitted(requestId, transactionId), transactions.submitted(requestId, transactionId))
      })
    )
  }))
