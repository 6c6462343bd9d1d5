/**
 * The writer's committed batches, told at once to the readers of the same
 * database in the same process (by `SqlClient`: the one object a deployment
 * shares), so that a local stream is woken at the commit, not at the next
 * poll or after `NOTIFY`'s round trip, and handed the entries committed, so
 * that it need not read them back. On SQLite the embedded file is locked to
 * one process: the writer and every reader are local.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as SqlClient from "effect/sql/SqlClient"
import type { Entry } from "./table.js"

/**
 * A committed batch: the entries inserted for each quote of the batch, in
 * order (none for a quote whose events were not inserted: its terminal event
 * was recorded before).
 */
export type Batch = ReadonlyMap<string, ReadonlyArray<Entry>>

/** Told each committed batch. */
export type Listener = (batch: Batch) => void

const listeners = new WeakMap<SqlClient.SqlClient, Set<Listener>>()

/** Tells the local readers of `sql`'s database that `batch` is committed. */
export const committed = (sql: SqlClient.SqlClient, batch: Batch): void => {
  const set = listeners.get(sql)
  if (set !== undefined) { for (const listener of set) listener(batch) }
}

/** Registers `listener` for the batches committed on `sql` in this process, until the scope closes. */
export const listen = (sql: SqlClient.SqlClient, listener: Listener): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const set = listeners.get(sql) ?? new Set()
      set.add(listener)
      listeners.set(sql, set)
    }),
    () => Effect.sync(() => listeners.get(sql)?.delete(listener))
  )
