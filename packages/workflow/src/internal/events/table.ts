/**
 * The table of the event log, `gcx_quote_events`, and its statements, the same
 * on SQLite and PostgreSQL: one row per event of a quote, `seq` counted from 1
 * within the quote by the statement that inserts it, none after the terminal.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as EventRelay from "../../EventRelay.js"

/** The table of the event log. */
export const table = "gcx_quote_events"

/** An event of a quote and its sequence number within the quote (1, 2, …). */
export interface Entry {
  readonly seq: number
  readonly event: QuoteEvent.QuoteEvent
}

/** Creates the table when it is missing (nodes started at once race in PostgreSQL's catalog: tried again). */
export const create = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError.SqlError> =>
  sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
    request_id VARCHAR(64) NOT NULL,
    seq INTEGER NOT NULL,
    tag VARCHAR(32) NOT NULL,
    event_json TEXT NOT NULL,
    recorded_at BIGINT NOT NULL,
    PRIMARY KEY (request_id, seq)
  )`.pipe(Effect.asVoid, Effect.retry({ times: 3, schedule: Schedule.spaced("100 millis") }))

/** An event as the log keeps it: without card data (`Submitted` loses its masked card); terminal events whole. */
export const recorded = (event: QuoteEvent.QuoteEvent): QuoteEvent.QuoteEvent =>
  QuoteEvent.isTerminal(event) ? event : EventRelay.relayed(event) ?? event

/**
 * Inserts `event` as the next event of quote `requestId` (its `seq` the
 * quote's last plus one), unless the quote's terminal event is recorded
 * already: a terminal is recorded once, and nothing after it. Answers the
 * event's `seq`, or `undefined` when it was not inserted. Two writers of one
 * quote at once (a quote moving between runners) collide on the primary key:
 * the transaction fails and is tried again.
 */
export const insert = (
  sql: SqlClient.SqlClient,
  requestId: string,
  event: QuoteEvent.QuoteEvent,
  now: number
): Effect.Effect<number | undefined, SqlError.SqlError> =>
  sql<{ readonly seq: number | bigint }>`INSERT INTO ${sql(table)} (request_id, seq, tag, event_json, recorded_at)
    SELECT CAST(${requestId} AS VARCHAR(64)), COALESCE(MAX(seq), 0) + 1, CAST(${event._tag} AS VARCHAR(32)),
      CAST(${JSON.stringify(QuoteEvent.encode(event))} AS TEXT), CAST(${now} AS BIGINT)
    FROM ${sql(table)} WHERE request_id = ${requestId}
    HAVING COUNT(CASE WHEN tag = 'Completed' OR tag = 'Failed' THEN 1 END) = 0
    RETURNING seq`.pipe(Effect.map((rows) => rows.length === 0 ? undefined : Number(rows[0]!.seq)))

const decodeEvent = Schema.decodeSync(Schema.fromJsonString(QuoteEvent.QuoteEvent))

/** The events of quote `requestId` after `afterSeq`, in order. A row that does not decode is a defect. */
export const read = (
  sql: SqlClient.SqlClient,
  requestId: string,
  afterSeq: number
): Effect.Effect<ReadonlyArray<Entry>, SqlError.SqlError> =>
  sql<{ readonly seq: number | bigint; readonly event_json: string }>`SELECT seq, event_json FROM ${sql(table)}
    WHERE request_id = ${requestId} AND seq > ${afterSeq} ORDER BY seq`.pipe(
    Effect.map((rows) => rows.map((row) => ({ seq: Number(row.seq), event: decodeEvent(row.event_json) })))
  )

/** Whether the terminal event of quote `requestId` is recorded. */
export const ended = (sql: SqlClient.SqlClient, requestId: string): Effect.Effect<boolean, SqlError.SqlError> =>
  sql<{ readonly seq: number }>`SELECT seq FROM ${sql(table)}
    WHERE request_id = ${requestId} AND (tag = 'Completed' OR tag = 'Failed')`.pipe(
    Effect.map((rows) => rows.length > 0)
  )
