/**
 * The gateway's ownership table, `gcx_gateway_quotes (request_id, key_id,
 * created_at)`: which API key POSTed each quote. Written by `GatewayQuotes`,
 * read by it (404 for another key's quote) and by the webhook trigger
 * (`WebhookDelivery`), on whichever node creates it first.
 */
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as SqlClient from "effect/sql/SqlClient"

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
