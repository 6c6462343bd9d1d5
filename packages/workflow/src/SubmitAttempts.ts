/**
 * The durable attempt counter of the submit activity. The service refuses a
 * POST that repeats a requestId with an unchanged `previousAttempts`
 * (service-notes.md), and an activity replayed after a crash cannot know what
 * the crashed run sent. So every POST attempt first takes its
 * `previousAttempts` from a counter committed to the database: a replay always
 * sends more than any attempt sent before it, and the service answers the
 * original transaction.
 *
 * One row per requestId in `gcx_submit_attempts`, in the database of the
 * deployment (SQLite embedded, PostgreSQL across runners).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"

/** The counter service. */
export interface Service {
  /**
   * Records, durably, that one more POST attempt of `requestId` is about to
   * be sent, and returns its `previousAttempts`: 0 for the first attempt ever,
   * then one more each time.
   */
  readonly next: (requestId: string) => Effect.Effect<number, SqlError.SqlError>
}

/** The counter service. */
export class SubmitAttempts extends Context.Service<SubmitAttempts, Service>()("@gcx/workflow/SubmitAttempts") {}

/** The table of the counter. */
export const table = "gcx_submit_attempts"

/** The counter over the `SqlClient` in context; creates its table when it is missing (SQLite and PostgreSQL). */
export const make: Effect.Effect<Service, SqlError.SqlError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Nodes started at once on a new PostgreSQL database race to create the table, and the loser's
  // `CREATE TABLE IF NOT EXISTS` can fail in the catalog; tried again, it finds the table.
  yield* sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
    request_id VARCHAR(64) PRIMARY KEY,
    attempts INTEGER NOT NULL
  )`.pipe(Effect.retry({ times: 3, schedule: Schedule.spaced("100 millis") }))
  return SubmitAttempts.of({
    // One statement, committed on its own: the upsert returns the count including this attempt.
    next: (requestId) =>
      sql<{ readonly attempts: number }>`INSERT INTO ${sql(table)} (request_id, attempts) VALUES (${requestId}, 1)
        ON CONFLICT (request_id) DO UPDATE SET attempts = ${sql(table)}.attempts + 1
        RETURNING attempts`.pipe(Effect.map((rows) => Number(rows[0].attempts) - 1))
  })
})

/** The counter as a layer over the `SqlClient` in context. */
export const layer: Layer.Layer<SubmitAttempts, SqlError.SqlError, SqlClient.SqlClient> = Layer.effect(
  SubmitAttempts,
  make
)
