/**
 * The wake-ups of a node's open event streams: one registry per node, handed
 * the new events of its quotes at once by the node's own writer (`Commits`:
 * on SQLite the only one, the file being locked to one process), and woken by
 * one fiber for the others (SQLite: a poll of the table's new rows every
 * `interval`, a fallback; PostgreSQL: `LISTEN` on the writers' channel),
 * which wakes the streams of those quotes only. Never a query loop per
 * stream: a stream reads its quote's rows when woken by anything but a
 * hand-over.
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type * as SqlClient from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import * as Commits from "./commits.js"
import * as Table from "./table.js"
import { channel } from "./writer.js"

/** The wake-ups of a node's streams. */
export interface Wakeups {
  /** A watch of quote `requestId`, woken whenever it may have new events (once registered: read after). */
  readonly watch: (requestId: string) => Effect.Effect<Watch, never, Scope.Scope>
}

/**
 * A wake-up that one fiber waits on: `wake` ends the waiting `wait`, or the
 * next one when none waits (wake-ups in between count once). A sliding queue
 * of one without the queue: a stream that waits holds a flag and a callback.
 */
export interface Signal {
  readonly wait: Effect.Effect<void>
  readonly wake: () => void
}

/**
 * A stream's watch of its quote: its signal, and what woke it since the last
 * `take`. The entries this process's writer committed are handed over, in
 * order; any other wake-up (another node's commit, a poll, a reconnection)
 * means that the table must be read. Plain data, one object a stream (a
 * gateway holds thousands open): read it with `take`.
 */
export interface Watch extends Signal {
  /** The entries handed over since the last `take`. */
  handed: Array<Table.Entry>
  /** Woken by anything but a hand-over since the last `take` (as at first): the table must be read. */
  stale: boolean
  /** The highest seq handed over: a poll's row up to it is not news. */
  upTo: number
}

/**
 * What woke `watch` since the last `take`: the entries handed over (`[]`:
 * none, nothing else woke it), or `undefined` when the table must be read (as
 * at the first `take`).
 */
export const take = (watch: Watch): ReadonlyArray<Table.Entry> | undefined => {
  const handed = watch.handed
  if (handed.length > 0) watch.handed = []
  if (!watch.stale) return handed
  watch.stale = false
  return undefined
}

/** A new signal, not woken. */
export const signal = (): Signal => {
  let woken = false
  let resume: ((effect: Effect.Effect<void>) => void) | undefined
  const wait = Effect.callback<void>((done) => {
    if (woken) {
      woken = false
      return done(Effect.void)
    }
    resume = done
    return Effect.sync(() => {
      if (resume === done) resume = undefined
    })
  })
  const wake = () => {
    const waiting = resume
    if (waiting === undefined) {
      woken = true
      return
    }
    resume = undefined
    waiting(Effect.void)
  }
  return { wait, wake }
}

/** A new watch: stale (its first `take` asks for a read). */
const newWatch = (): Watch => {
  const { wait, wake } = signal()
  return { wait, wake, handed: [], stale: true, upTo: 0 }
}

/** Hands `entries` (not empty) over to `watch`, and wakes it. */
const handOver = (watch: Watch, entries: ReadonlyArray<Table.Entry>): void => {
  for (const entry of entries) watch.handed.push(entry)
  watch.upTo = Math.max(watch.upTo, entries[entries.length - 1]!.seq)
  watch.wake()
}

/** Wakes `watch`, which must read the table. */
const markStale = (watch: Watch): void => {
  watch.stale = true
  watch.wake()
}

/** The registry: the watchers of the open streams, by quote. */
const registry = () => {
  const watchers = new Map<string, Set<Watch>>()
  /** Tells quote `requestId`'s watchers that it may have news, seq `seq` at most (any when absent). */
  const wake = (requestId: string, seq?: number) => {
    const set = watchers.get(requestId)
    if (set === undefined) return
    for (const each of set) if (seq === undefined || seq > each.upTo) markStale(each)
  }
  const hand = (requestId: string, entries: ReadonlyArray<Table.Entry>) => {
    const set = watchers.get(requestId)
    if (set === undefined) return
    for (const each of set) {
      if (entries.length > 0) handOver(each, entries)
      else markStale(each)
    }
  }
  const wakeAll = () => {
    for (const requestId of watchers.keys()) wake(requestId)
  }
  const watch = (requestId: string) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const added = newWatch()
        const set = watchers.get(requestId) ?? new Set()
        set.add(added)
        watchers.set(requestId, set)
        return added
      }),
      (removed) =>
        Effect.sync(() => {
          const set = watchers.get(requestId)
          set?.delete(removed)
          if (set?.size === 0) watchers.delete(requestId)
        })
    )
  return { watchers, wake, hand, wakeAll, watch }
}

/** The registry, also handed the entries of the batches this process's writer commits on `sql`, at once (`Commits`). */
const localRegistry = (sql: SqlClient.SqlClient): Effect.Effect<ReturnType<typeof registry>, never, Scope.Scope> => {
  const local = registry()
  return Effect.as(
    Commits.listen(sql, (batch) => {
      for (const [requestId, entries] of batch) local.hand(requestId, entries)
    }),
    local
  )
}

/**
 * SQLite: one fiber reads the rows added since its last poll (by `rowid`,
 * which only grows: rows are never deleted) every `interval` while a stream
 * is open, and wakes the watchers that were not handed them. Back from idle, it starts from the newest row and wakes every
 * stream, each of which reads its quote again.
 */
export const polling = (
  sql: SqlClient.SqlClient,
  interval: Duration.Input
): Effect.Effect<Wakeups, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { wake, wakeAll, watch, watchers } = yield* localRegistry(sql)
    let last: number | undefined
    const poll = Effect.gen(function*() {
      if (watchers.size === 0) {
        last = undefined
        return
      }
      if (last === undefined) {
        const [newest] = yield* sql<{ readonly id: number | null }>`SELECT MAX(rowid) AS id FROM ${sql(Table.table)}`
        last = Number(newest?.id ?? 0)
        return wakeAll()
      }
      const rows = yield* sql<{ readonly id: number; readonly request_id: string; readonly seq: number }>`SELECT
        rowid AS id, request_id, seq FROM ${sql(Table.table)} WHERE rowid > ${last} ORDER BY rowid`
      if (rows.length === 0) return
      last = Number(rows[rows.length - 1]!.id)
      // the newest row of each quote: its watchers that were handed it already are not woken again
      const newest = new Map<string, number>()
      for (const row of rows) newest.set(row.request_id, Number(row.seq))
      for (const [requestId, seq] of newest) wake(requestId, seq)
    })
    yield* poll.pipe(
      Effect.catchCause((cause) => Effect.logDebug("could not poll the quote events", cause)),
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
    return { watch }
  })

/**
 * PostgreSQL: one `LISTEN` on the writers' channel; each announcement wakes
 * the streams of the quotes it names. Every (re)connection wakes every stream
 * (what was announced while it was down is read again); a lost connection is
 * opened again after a second.
 */
export const listening = (
  pg: PgClient.PgClient,
  sql: SqlClient.SqlClient
): Effect.Effect<Wakeups, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { wake, wakeAll, watch } = yield* localRegistry(sql)
    yield* Effect.gen(function*() {
      const notifications = yield* pg.listen(channel)
      wakeAll()
      yield* Stream.fromQueue(notifications).pipe(
        Stream.runForEach((notification) =>
          Effect.sync(() => {
            for (const requestId of notification.payload.split(",")) wake(requestId)
          })
        )
      )
    }).pipe(
      Effect.scoped,
      Effect.catchCause((cause) => Effect.logDebug("stopped listening to the quote events", cause)),
      Effect.andThen(Effect.sleep(Duration.seconds(1))),
      Effect.forever,
      Effect.forkScoped
    )
    return { watch }
  })
