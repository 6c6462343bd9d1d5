/**
 * The gateway's quotes: their ids, who owns them, submitting them to the
 * durable engine, and their view from the event log.
 *
 * - **Ids.** A quote's id is the requestId the gateway derives from the
 *   caller's key id and its `Idempotency-Key`: `HMAC-SHA-256(k, keyId + "\n"
 *   + idempotencyKey)`, its first 32 hex digits with any run of 8 digits
 *   broken (`Ids.breakDigitRuns`), `k` derived from the data key with HKDF
 *   (`requestIdLabel`). The same key and Idempotency-Key give the same quote;
 *   two callers never share one; nobody without the data key can tell an
 *   Idempotency-Key from an id. A rotation of the data key gives new ids to
 *   the same Idempotency-Keys (a quote submitted before is found by its id).
 * - **Ownership.** `gcx_gateway_quotes (request_id, key_id, created_at)`, on
 *   SQLite and PostgreSQL: a quote of another key is not found (404).
 * - **Submit.** `DurableQuotes.submit` under the derived id: the same card is
 *   the same quote; another card, `RequestIdConflict` (409). The card is
 *   validated first (400, before any I/O), then the ownership row is written,
 *   then the quote: a quote that ends at once (the POST answered it) is owned
 *   when its outcome is told, so its webhooks go out. A crash between the two
 *   leaves an owned id with no quote: its view is pending with no step, and a
 *   retry of the POST (same Idempotency-Key) submits it.
 * - **View.** Built from `EventLog.read` (`viewOf`).
 */
import * as Card from "@gcx/core/Card"
import * as Ids from "@gcx/core/Ids"
import * as CardFingerprint from "@gcx/poller/CardFingerprint"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as EventLog from "@gcx/workflow/EventLog"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import type { ApiKey } from "./ApiKeys.js"
import type { Accepted } from "./GatewayApi.js"
import * as GatewayErrors from "./GatewayErrors.js"
import * as QuoteView from "./QuoteView.js"

/** The HKDF `info` of the key that derives quote ids from Idempotency-Keys. */
export const requestIdLabel = "gcx gateway request id"

/** The ownership table. */
export const table = "gcx_gateway_quotes"

/** Derives quote ids under the key `key` (see the module's doc). */
export const requestIds = (key: Redacted.Redacted<Uint8Array>) => {
  const bytes = Redacted.value(key)
  return (keyId: string, idempotencyKey: string): string =>
    Ids.breakDigitRuns(
      Crypto.createHmac("sha256", bytes).update(`${keyId}\n${idempotencyKey}`, "utf8").digest("hex").slice(0, 32)
    )
}

const formatTime = (time: DateTime.Utc | undefined) => time === undefined ? undefined : DateTime.formatIso(time)

/** A quote's view from its events, in order: the last progress, then its terminal event when it has one. */
export const viewOf = (id: string, entries: ReadonlyArray<EventLog.Entry>): QuoteView.QuoteView => {
  let status: QuoteView.Status = "pending"
  let percentComplete = 0
  let steps: QuoteView.QuoteView["steps"] = []
  let outcome: QuoteView.QuoteView["outcome"]
  let error: QuoteView.QuoteView["error"]
  for (const { event } of entries) {
    switch (event._tag) {
      case "Submitted":
        percentComplete = event.percentComplete ?? percentComplete
        break
      case "Progress":
        percentComplete = event.percentComplete
        steps = event.steps.map((step) => {
          const completionTime = formatTime(step.completionTime)
          return {
            descriptionTag: step.descriptionTag,
            isCompleted: step.isCompleted,
            ...(completionTime === undefined ? {} : { completionTime })
          }
        })
        break
      case "Completed":
        status = "completed"
        percentComplete = 100
        outcome = QuoteView.outcomeOf(event.quote)
        break
      case "Failed":
        status = "failed"
        error = QuoteView.failureOf(event.error)
        break
    }
  }
  return {
    id,
    status,
    percentComplete,
    steps,
    ...(outcome === undefined ? {} : { outcome }),
    ...(error === undefined ? {} : { error }),
    links: QuoteView.links(id)
  }
}

/** The gateway's quotes service. */
export interface Service {
  /** The quote id of `idempotencyKey` for the caller `keyId`. */
  readonly requestId: (keyId: string, idempotencyKey: string) => string
  /** Submits a validated card under the caller's Idempotency-Key, and records that the quote is the caller's. */
  readonly submit: (
    caller: ApiKey,
    idempotencyKey: string,
    card: Card.Card
  ) => Effect.Effect<
    Accepted,
    GatewayErrors.IdempotencyKeyReused | GatewayErrors.InvalidRequest | GatewayErrors.Unavailable
  >
  /** Whether quote `id` is the caller's (404 otherwise). */
  readonly owned: (
    caller: ApiKey,
    id: string
  ) => Effect.Effect<void, GatewayErrors.NotFound | GatewayErrors.Unavailable>
  /** The caller's quote `id`, as its events so far show it. */
  readonly view: (
    caller: ApiKey,
    id: string
  ) => Effect.Effect<QuoteView.QuoteView, GatewayErrors.NotFound | GatewayErrors.Unavailable>
}

/** The gateway's quotes service. */
export class GatewayQuotes extends Context.Service<GatewayQuotes, Service>()("@gcx/gateway/GatewayQuotes") {}

/** A database failure: logged (its message names no card), answered 503. */
const unavailable = (error: SqlError.SqlError) =>
  Effect.andThen(
    Effect.logWarning("gateway database failure").pipe(Effect.annotateLogs({ reason: error.reason._tag })),
    Effect.fail(GatewayErrors.unavailable)
  )

/** Creates the ownership table when missing (SQLite and PostgreSQL). */
const migrate = (sql: SqlClient.SqlClient) =>
  sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
    request_id TEXT PRIMARY KEY,
    key_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
  )`

/**
 * Builds the service over the durable quotes, the event log and the database
 * in context, with quote ids derived from `dataKey` (creates the table).
 */
export const make = (dataKey: CardCipher.DataKey): Effect.Effect<
  Service,
  SqlError.SqlError,
  DurableQuotes.DurableQuotes | EventLog.EventLog | SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const quotes = yield* DurableQuotes.DurableQuotes
    const log = yield* EventLog.EventLog
    const sql = yield* SqlClient.SqlClient
    yield* migrate(sql)
    const requestId = requestIds(CardFingerprint.deriveKey(dataKey.bytes, requestIdLabel, "GatewayRequestIdKey"))

    const own = (id: string, keyId: string) =>
      Effect.flatMap(
        DateTime.now,
        (now) =>
          sql`INSERT INTO ${sql(table)} (request_id, key_id, created_at)
            VALUES (${id}, ${keyId}, ${DateTime.toEpochMillis(now)}) ON CONFLICT (request_id) DO NOTHING`
      )

    const submit: Service["submit"] = (caller, idempotencyKey, card) => {
      const id = requestId(caller.id, idempotencyKey)
      return Card.validate(card).pipe(
        Effect.tap(() => own(id, caller.id).pipe(Effect.catchTag("SqlError", unavailable))),
        Effect.flatMap((valid) => quotes.submit(valid, { requestId: id })),
        Effect.catchTags({
          RequestIdConflict: () => Effect.fail(GatewayErrors.idempotencyKeyReused),
          InvalidCardInput: (error) => Effect.fail(GatewayErrors.invalidRequest(error.message.replace(/^card\./, ""))),
          InvalidRequest: (error) => Effect.fail(GatewayErrors.invalidRequest(error.message))
        }),
        Effect.as<Accepted>({ id, status: "pending", links: QuoteView.links(id) }),
        Effect.withSpan("gcx.gateway.submit", { attributes: { "gcx.gateway.key_id": caller.id } })
      )
    }

    const owned: Service["owned"] = (caller, id) =>
      sql<{ readonly key_id: string }>`SELECT key_id FROM ${sql(table)} WHERE request_id = ${id}`.pipe(
        Effect.catchTag("SqlError", unavailable),
        Effect.flatMap((rows) =>
          rows.length === 1 && rows[0]!.key_id === caller.id ? Effect.void : Effect.fail(GatewayErrors.notFound)
        )
      )

    const view: Service["view"] = (caller, id) =>
      owned(caller, id).pipe(
        Effect.andThen(log.read(id, 0).pipe(Effect.catchTag("SqlError", unavailable))),
        Effect.map((entries) => viewOf(id, entries)),
        Effect.withSpan("gcx.gateway.view", { attributes: { "gcx.gateway.key_id": caller.id } })
      )

    return GatewayQuotes.of({ requestId, submit, owned, view })
  })

/** The service with quote ids derived from the data key given in base64 (a malformed key is a defect). */
export const layer = (dataKey: string | Redacted.Redacted<string>): Layer.Layer<
  GatewayQuotes,
  SqlError.SqlError,
  DurableQuotes.DurableQuotes | EventLog.EventLog | SqlClient.SqlClient
> =>
  Layer.effect(
    GatewayQuotes,
    Effect.flatMap(
      Effect.sync(() =>
        Result.getOrThrowWith(
          CardCipher.parseKey(Redacted.isRedacted(dataKey) ? Redacted.value(dataKey) : dataKey),
          (reason) => new Error(`GatewayQuotes: the data key ${reason}`)
        )
      ),
      make
    )
  )

/** The service with quote ids derived from `GCX_DATA_KEY` (`CardCipher.keysConfig`). */
export const layerConfig: Layer.Layer<
  GatewayQuotes,
  SqlError.SqlError | Config.ConfigError,
  DurableQuotes.DurableQuotes | EventLog.EventLog | SqlClient.SqlClient
> = Layer.effect(GatewayQuotes, Effect.flatMap(CardCipher.keysConfig, (keys) => make(keys.current)))
