/**
 * The wake-ups of a node's open event streams: one registry per node, told
 * which quotes have new events at once by the node's own writer (`Commits`:
 * on SQLite the only one, the file being locked to one process) and by one
 * fiber for the others (SQLite: a poll of the table's new rows every
 * `interval`, a fallback; PostgreSQL: `LISTEN` on the writers' channel),
 * which wakes the streams of those quotes only. Never a query loop per
 * stream: a stream reads its quote's rows when woken.
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
  /** A signal for quote `requestId`, woken whenever it may have new events (once registered: read after). */
  readonly watch: (requestId: string) => Effect.Effect<Signal, never, Scope.Scope>
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

/** The registry: the signals of the open streams, by quote. */
const registry = () => {
  const watchers = new Map<string, Set<Signal>>()
  const wake = (requestId: string) => {
    const signals = watchers.get(requestId)
    if (signals !== undefined) { for (const signal of signals) signal.wake() }
  }
  const wakeAll = () => {
    for (const requestId of watchers.keys()) wake(requestId)
  }
  const watch = (requestId: string) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const watching = signal()
        const signals = watchers.get(requestId) ?? new Set()
        signals.add(watching)
        watchers.set(requestId, signals)
        return watching
      }),
      (watching) =>
        Effect.sync(() => {
          const signals = watchers.get(requestId)
          signals?.delete(watching)
          if (signals?.size === 0) watchers.delete(requestId)
        })
    )
  return { watchers, wake, wakeAll, watch }
}

/** The registry, also woken at once by the batches this process's writer commits on `sql` (`Commits`). */
const localRegistry = (sql: SqlClient.SqlClient): Effect.Effect<ReturnType<typeof registry>, never, Scope.Scope> => {
  const local = registry()
  return Effect.as(
    Commits.listen(sql, (requestIds) => {
      for (const requestId of requestIds) local.wake(requestId)
    }),
    local
  )
}

/**
 * SQLite: one fiber reads the rows added since its last poll (by `rowid`,
 * which only grows: rows are never deleted) every `interval` while a stream
 * is open. Back from idle, it starts from the newest row and wakes every
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
      const rows = yield* sql<{ readonly id: number; readonly request_id: string }>`SELECT rowid AS id, request_id
        FROM ${sql(Table.table)} WHERE rowid > ${last} ORDER BY rowid`
      if (rows.length === 0) return
      last = Number(rows[rows.length - 1]!.id)
      for (const row of new Set(rows.map((row) => row.request_id))) wake(row)
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
