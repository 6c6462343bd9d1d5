/**
 * The tables of `ApiKeys`: their names, their rows, their creation, and the
 * resealing of the webhook secrets under the current data key.
 */
import type * as CardCipher from "@gcx/workflow/CardCipher"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as SqlClient from "effect/sql/SqlClient"

/** The table of the keys. */
export const keysTable = "gcx_gateway_keys"

/** The table of the webhook endpoints. */
export const webhooksTable = "gcx_gateway_webhooks"

/**
 * The table of the webhook secrets replaced by a rotation, one per endpoint
 * at most, each until it expires: a delivery is signed with it too until then.
 */
export const previousSecretsTable = "gcx_gateway_webhook_previous_secrets"

/** A row of the keys' table. */
export interface KeyRow {
  readonly id: string
  readonly name: string
  readonly rate_per_second: number | string
  readonly burst: number | string
  readonly created_at: number | string | bigint
  readonly revoked_at: number | string | bigint | null
}

/** A row of the webhooks' table. */
export interface WebhookRow {
  readonly id: string
  readonly key_id: string
  readonly url: string
  readonly secret_sealed: string
}

/** A row of the previous secrets' table: sealed as it was, with its endpoint's `sealingContext`. */
export interface PreviousSecretRow {
  readonly webhook_id: string
  readonly secret_sealed: string
  readonly expires_at: number | string | bigint
}

/** The additional authenticated data of a webhook's sealed secret: its row, so a sealed secret cannot move to another. */
export const sealingContext = (webhookId: string) => `${webhooksTable}:${webhookId}`

/** A time the tables keep (milliseconds since the epoch). */
export const utc = (millis: number | string | bigint): DateTime.Utc => DateTime.makeUnsafe(Number(millis))

/** Creates the tables when missing (nodes started at once on a new PostgreSQL may race: tried again). */
export const createTables = (sql: SqlClient.SqlClient) =>
  sql`CREATE TABLE IF NOT EXISTS ${sql(keysTable)} (
    id VARCHAR(64) PRIMARY KEY,
    name VARCHAR(200) NOT NULL,
    key_hash VARCHAR(64) NOT NULL UNIQUE,
    rate_per_second DOUBLE PRECISION NOT NULL,
    burst INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
  )`.pipe(
    Effect.andThen(sql`CREATE TABLE IF NOT EXISTS ${sql(webhooksTable)} (
      id VARCHAR(64) PRIMARY KEY,
      key_id VARCHAR(64) NOT NULL REFERENCES ${sql(keysTable)} (id),
      url VARCHAR(2048) NOT NULL,
      secret_sealed TEXT NOT NULL,
      created_at BIGINT NOT NULL
    )`),
    Effect.andThen(
      sql`CREATE INDEX IF NOT EXISTS ${sql(`${webhooksTable}_key_id`)} ON ${sql(webhooksTable)} (key_id)`
    ),
    Effect.andThen(sql`CREATE TABLE IF NOT EXISTS ${sql(previousSecretsTable)} (
      webhook_id VARCHAR(64) PRIMARY KEY REFERENCES ${sql(webhooksTable)} (id),
      secret_sealed TEXT NOT NULL,
      expires_at BIGINT NOT NULL
    )`),
    Effect.retry({ times: 3, schedule: Schedule.spaced("100 millis") })
  )

/**
 * Refuses a table whose webhook secrets were sealed under neither data key
 * (`CardCipher.UnsealError`, naming the key's id: a data key mistaken, where
 * every webhook would be left out); and, when `write`, seals again under
 * `GCX_DATA_KEY` the secrets sealed under `GCX_DATA_KEY_PREVIOUS` (a
 * rotation: once done, the previous key is no longer needed for them), the
 * replaced secrets of rotations still signing included, and drops those that
 * no longer sign. A secret that does not open for another reason is left as
 * it is (its endpoint is left out, with a warning, when used). Gives the
 * number of secrets left sealed under `GCX_DATA_KEY_PREVIOUS` (none when
 * `write`).
 */
export const resealWebhooks = (sql: SqlClient.SqlClient, cipher: CardCipher.Service, write: boolean) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    // the previous secrets that still sign, under their endpoint's context (the expired ones are dropped)
    if (write) yield* sql`DELETE FROM ${sql(previousSecretsTable)} WHERE expires_at <= ${now}`
    const tables = [
      { table: webhooksTable, column: "id", signing: sql.literal("") },
      { table: previousSecretsTable, column: "webhook_id", signing: sql`WHERE expires_at > ${now}` }
    ] as const
    let checked = 0
    let stale = 0
    for (const { column, signing, table } of tables) {
      const rows = yield* sql<{ readonly id: string; readonly secret_sealed: string }>`SELECT ${
        sql(column)
      } AS id, secret_sealed FROM ${sql(table)} ${signing}`
      for (const row of rows) {
        const resealed = yield* cipher.reseal(row.secret_sealed, sealingContext(row.id)).pipe(
          Effect.catchTag("UnsealError", (error) => error.keyId !== undefined ? Effect.fail(error) : Effect.succeedNone)
        )
        if (Option.isNone(resealed)) continue
        if (!write) {
          stale++
          continue
        }
        yield* sql`UPDATE ${sql(table)} SET secret_sealed = ${resealed.value}
          WHERE ${sql(column)} = ${row.id} AND secret_sealed = ${row.secret_sealed}`
      }
      checked += rows.length
    }
    if (checked > 0) yield* Effect.logDebug(`gateway: ${checked} webhook secrets checked under the data key`)
    return stale
  })
