/**
 * The writer's committed batches, told at once to the readers of the same
 * database in the same process (by `SqlClient`: the one object a deployment
 * shares), so that a local stream is woken at the commit, not at the next
 * poll or after `NOTIFY`'s round trip. On SQLite the embedded file is locked
 * to one process: the writer and every reader are local.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as SqlClient from "effect/sql/SqlClient"

/** Told the requestIds of each committed batch. */
export type Listener = (requestIds: ReadonlySet<string>) => void

const listeners = new WeakMap<SqlClient.SqlClient, Set<Listener>>()

/** Tells the local readers of `sql`'s database that the batch of `requestIds` is committed. */
export const committed = (sql: SqlClient.SqlClient, requestIds: ReadonlySet<string>): void => {
  const set = listeners.get(sql)
  if (set !== undefined) { for (const listener of set) listener(requestIds) }
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
