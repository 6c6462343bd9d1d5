/**
 * The gateway's ownership table, `gcx_gateway_quotes (request_id, key_id,
 * created_at)`: which API key POSTed each quote. Written by `GatewayQuotes`,
 * read by it (404 for another key's quote) and by the webhook trigger
 * (`WebhookDelivery`), on whichever node creates it first.
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Order from "effect/Order"
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

/** A row of the table (a type, not an interface: `sql.insert` takes records). */
type Row = {
  readonly request_id: string
  readonly key_id: string
  readonly created_at: number
}

const byId: Order.Order<Row> = Order.mapInput(Order.String, (row: Row) => row.request_id)

/** The most rows in one statement: 3,000 parameters, far below SQLite's and PostgreSQL's limits. */
const maxBatch = 1000

/** The name of a batch's span: a root span, linked to each POST's, with the batch's size. */
export const spanName = "gcx.gateway.owners.record"

/**
 * Records ownerships, the ones asked for at the same moment in one statement
 * (a group commit: one `INSERT … ON CONFLICT DO NOTHING RETURNING` and one
 * commit for up to `maxBatch` of them, where each on its own was a commit of
 * its own, the largest cost of a POST). `record` answers once its row is
 * committed: `false` when this call recorded it, `true` when it was recorded
 * before (another call for the same id in the batch counts as before). A
 * failed statement fails each call of its batch (Effect's request machinery
 * completes them with its failure); a call interrupted before its batch runs
 * leaves no row.
 *
 * Never call it inside a transaction: a batch runs on its own, in the first
 * caller's context, outside every caller's transaction. Nor put a cache on
 * its resolver: equal calls would share one answer, and both be told new.
 */
export const recorder = (sql: SqlClient.SqlClient) => {
  const resolver = RequestResolver.make<Own>((entries) => {
    // Sorted, so that two batches sharing ids on PostgreSQL (a retried POST, several gateways)
    // wait on each other instead of deadlocking; then one row per id, its first call's (the sort is stable).
    const sorted = Arr.sort(
      Arr.map(entries, ({ request }): Row => ({
        request_id: request.requestId,
        key_id: request.keyId,
        created_at: request.createdAt
      })),
      byId
    )
    const rows: Arr.NonEmptyArray<Row> = [sorted[0]]
    for (const row of sorted) if (row.request_id !== rows[rows.length - 1]!.request_id) rows.push(row)
    return sql<{ readonly request_id: string }>`INSERT INTO ${sql(table)} ${sql.insert(rows)}
      ON CONFLICT (request_id) DO NOTHING RETURNING request_id`.pipe(
      Effect.map((inserted) => {
        const fresh = new Set(inserted.map((row) => row.request_id))
        for (const entry of entries) {
          entry.completeUnsafe(Exit.succeed(!fresh.delete(entry.request.requestId)))
        }
      })
    )
  }).pipe(
    RequestResolver.batchN(maxBatch),
    RequestResolver.withSpan(spanName, { root: true, captureStackTrace: false })
  )
  return (requestId: string, keyId: string, createdAt: number): Effect.Effect<boolean, SqlError.SqlError> =>
    Effect.request(Own({ requestId, keyId, createdAt }), resolver)
}
