/**
 * The gateway's ownership table, `gcx_gateway_quotes (request_id, key_id,
 * created_at)`: which API key POSTed each quote. Written by `GatewayQuotes`,
 * read by it (404 for another key's quote) and by the webhook trigger
 * (`WebhookDelivery`), on whichever node creates it first.
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Request from "effect/Request"
import * as RequestResolver from "effect/RequestResolver"
import * as Schedule from "effect/Schedule"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"

/** The ownership table. */
export const table = "gcx_gateway_quotes"

/**
 * Creates the table and its index by time when missing (SQLite and
 * PostgreSQL); tried again briefly, as nodes starting together may race on
 * PostgreSQL's catalog.
 */
export const migrate = (sql: SqlClient.SqlClient) =>
  sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
    request_id TEXT PRIMARY KEY,
    key_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
  )`.pipe(
    Effect.andThen(sql`CREATE INDEX IF NOT EXISTS ${sql(`${table}_created`)} ON ${sql(table)} (created_at)`),
    Effect.retry({ times: 3, schedule: Schedule.spaced("100 millis") })
  )

/** One quote's ownership to record: whether it was recorded before (a replayed POST). */
interface Own extends Request.Request<boolean, SqlError.SqlError> {
  readonly requestId: string
  readonly keyId: string
  readonly createdAt: number
}

const Own = Request.of<Own>()

/** The most rows in one statement: 3,000 parameters, far below SQLite's and PostgreSQL's limits. */
const maxBatch = 1000

/**
 * Records ownerships, the ones asked for at the same moment in one statement
 * (a group commit: one `INSERT … ON CONFLICT DO NOTHING RETURNING` and one
 * commit for up to `maxBatch` of them, where each on its own was a commit of
 * its own, the largest cost of a POST). A failure of the statement fails
 * each of them. `record` answers once its row is committed:
 * `false` when this call recorded it, `true` when it was recorded before
 * (another call for the same id in the batch counts as before).
 */
export const recorder = (sql: SqlClient.SqlClient) => {
  const resolver = RequestResolver.make<Own>((entries) => {
    // one row per id: the first entry of an id is the one that records it
    const rows = Arr.dedupeWith(
      entries.map(({ request }) => ({
        request_id: request.requestId,
        key_id: request.keyId,
        created_at: request.createdAt
      })),
      (a, b) => a.request_id === b.request_id
    ) as Arr.NonEmptyArray<{ request_id: string; key_id: string; created_at: number }>
    return sql<{ readonly request_id: string }>`INSERT INTO ${sql(table)} ${sql.insert(rows)}
      ON CONFLICT (request_id) DO NOTHING RETURNING request_id`.pipe(
      Effect.map((inserted) => {
        const fresh = new Set(inserted.map((row) => row.request_id))
        for (const entry of entries) {
          entry.completeUnsafe(Exit.succeed(!fresh.delete(entry.request.requestId)))
        }
      }),
      Effect.catch((error) =>
        Effect.sync(() => {
          for (const entry of entries) entry.completeUnsafe(Exit.fail(error))
        })
      )
    )
  }).pipe(RequestResolver.batchN(maxBatch))
  return (requestId: string, keyId: string, createdAt: number): Effect.Effect<boolean, SqlError.SqlError> =>
    Effect.request(Own({ requestId, keyId, createdAt }), resolver)
}
