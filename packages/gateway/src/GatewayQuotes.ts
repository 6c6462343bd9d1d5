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
 *   Idempotency-Key from an id.
 * - **Key rotation.** With `GCX_DATA_KEY_PREVIOUS` set, `submit` also derives
 *   the id under the previous key and, when the caller owns that quote, keeps
 *   it: a retry across a rotation is the same quote, never a second one. A
 *   database whose newest quote was recorded under a data key that is neither
 *   (`gcx_request_ids.key_id`) is refused at start (`UnknownDataKey`): a wrong
 *   key would give every retry a new id.
 * - **Ownership.** `gcx_gateway_quotes (request_id, key_id, created_at)`, on
 *   SQLite and PostgreSQL: a quote of another key is not found (404). A row is
 *   never changed nor deleted, so the owners this process wrote or read are
 *   remembered (the last `ownersCapacity`): the event stream that follows a
 *   POST checks its owner without a query. The rows of concurrent POSTs are
 *   written together, one statement and one commit (`internal/owners.ts`).
 * - **Submit.** `DurableQuotes.submit` under the derived id: the same card is
 *   the same quote; another card, `RequestIdConflict` (409). The card is
 *   validated first (400, before any I/O), then the ownership row is written,
 *   then the quote: a quote that ends at once (the POST answered it) is owned
 *   when its outcome is told, so its webhooks go out. A crash between the two
 *   leaves an owned id with no quote: its view is pending with no step, and a
 *   retry of the POST (same Idempotency-Key) submits it.
 *   A replayed POST (the id was owned already) answers the quote's status
 *   from its events (one indexed read); a new one is pending.
 * - **View.** Built from `EventLog.read` (`viewOf`).
 */
import * as Card from "@gcx/core/Card"
import * as Ids from "@gcx/core/Ids"
import * as CardFingerprint from "@gcx/poller/CardFingerprint"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as EventLog from "@gcx/workflow/EventLog"
import * as RequestIds from "@gcx/workflow/RequestIds"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import type { ApiKey } from "./ApiKeys.js"
import type { Accepted } from "./GatewayApi.js"
import * as GatewayErrors from "./GatewayErrors.js"
import * as Owners from "./internal/owners.js"
import * as QuoteView from "./QuoteView.js"

/** The HKDF `info` of the key that derives quote ids from Idempotency-Keys. */
export const requestIdLabel = "gcx gateway request id"

/** The ownership table. */
export const table = Owners.table

/** How many quotes' owners a gateway remembers (see the module's doc). */
const ownersCapacity = 10_000

/** Derives quote ids under the key `key` (see the module's doc). */
export const requestIds = (key: Redacted.Redacted<Uint8Array>) => {
  // a KeyObject, made once: `createHmac` prepares raw key bytes anew on every call (about 8 µs here)
  const secret = Crypto.createSecretKey(Redacted.value(key))
  return (keyId: string, idempotencyKey: string): string =>
    Ids.breakDigitRuns(
      Crypto.createHmac("sha256", secret).update(`${keyId}\n${idempotencyKey}`, "utf8").digest("hex").slice(0, 32)
    )
}

/** The quote ids of the data key `key`. */
const requestIdsOf = (key: CardCipher.DataKey) =>
  requestIds(CardFingerprint.deriveKey(key.bytes, requestIdLabel, "GatewayRequestIdKey"))

/**
 * The database's quotes were recorded under a data key that is neither
 * `GCX_DATA_KEY` nor `GCX_DATA_KEY_PREVIOUS`: with it, every retried POST
 * would be a new quote. Names the key's id, never a key.
 */
export class UnknownDataKey extends Schema.TaggedError<UnknownDataKey>()("UnknownDataKey", {
  keyId: Schema.String
}) {
  override get message(): string {
    return `this database's quotes were recorded under data key ${this.keyId}, which is neither ` +
      `${CardCipher.keyVariable} nor ${CardCipher.previousKeyVariable}: start with that key ` +
      `(or set it as ${CardCipher.previousKeyVariable} to rotate)`
  }
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
  /**
   * Submits a validated card under the caller's Idempotency-Key (its id under
   * the previous data key when the caller owns that one), and records that the
   * quote is the caller's; a replay answers the quote's current status.
   */
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

/** The id of the data key the newest quote of the gateway was recorded under (`RequestIds`), if any. */
const newestKeyId = (sql: SqlClient.SqlClient) =>
  sql<{ readonly key_id: string }>`SELECT r.key_id FROM ${sql(table)} g
    JOIN ${sql(RequestIds.table)} r ON r.request_id = g.request_id
    ORDER BY g.created_at DESC LIMIT 1`.pipe(Effect.map((rows) => Option.fromNullishOr(rows[0]?.key_id)))

/**
 * Builds the service over the durable quotes, the event log and the database
 * in context, with quote ids derived from `dataKey` (and, for the quotes
 * submitted before a rotation, from `previous`). Creates the table; fails
 * with `UnknownDataKey` when the newest quote was recorded under neither key.
 */
export const make = (dataKey: CardCipher.DataKey, previous?: CardCipher.DataKey): Effect.Effect<
  Service,
  SqlError.SqlError | UnknownDataKey,
  DurableQuotes.DurableQuotes | EventLog.EventLog | SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const quotes = yield* DurableQuotes.DurableQuotes
    const log = yield* EventLog.EventLog
    const sql = yield* SqlClient.SqlClient
    yield* Owners.migrate(sql)
    const newest = yield* newestKeyId(sql)
    if (Option.isSome(newest) && newest.value !== dataKey.id && newest.value !== previous?.id) {
      return yield* new UnknownDataKey({ keyId: newest.value })
    }
    const requestId = requestIdsOf(dataKey)
    /** The owner of each quote this process wrote or read, by id: rows never change (the oldest forgotten past capacity). */
    const owners = new Map<string, string>()
    const remember = (id: string, keyId: string) => {
      if (owners.size >= ownersCapacity) owners.delete(owners.keys().next().value!)
      owners.set(id, keyId)
    }
    const previousId = previous === undefined ? undefined : requestIdsOf(previous)

    /** The caller's id for `idempotencyKey`: the previous key's when the caller owns that quote. */
    const idOf = (keyId: string, idempotencyKey: string) => {
      const id = requestId(keyId, idempotencyKey)
      if (previousId === undefined) return Effect.succeed(id)
      const before = previousId(keyId, idempotencyKey)
      return sql<{ readonly request_id: string }>`SELECT request_id FROM ${sql(table)}
        WHERE request_id = ${before} AND key_id = ${keyId}`.pipe(Effect.map((rows) => rows.length > 0 ? before : id))
    }

    const record = Owners.recorder(sql)
    /** Records the caller's ownership of quote `id`; whether it was recorded before (a replayed POST). */
    const own = (id: string, keyId: string) =>
      Effect.flatMap(DateTime.now, (now) =>
        Effect.map(record(id, keyId, DateTime.toEpochMillis(now)), (replayed) => {
          if (!replayed) remember(id, keyId)
          return replayed
        }))

    /** The answer of a POST: pending when new, else the quote's status from its events. */
    const accepted = (id: string, replayed: boolean) =>
      Effect.map(
        replayed
          ? Effect.map(log.read(id, 0), (entries) => viewOf(id, entries).status)
          : Effect.succeed<QuoteView.Status>("pending"),
        (status): Accepted => ({ id, status, links: QuoteView.links(id) })
      )

    const submit: Service["submit"] = (caller, idempotencyKey, card) =>
      Effect.gen(function*() {
        const valid = yield* Card.validate(card)
        const id = yield* idOf(caller.id, idempotencyKey)
        const replayed = yield* own(id, caller.id)
        // the submit waits for a database that went away: a caller is answered 503 after `submitWait`
        // instead, and its retry with the same key is the same quote
        yield* quotes.submit(valid, { requestId: id }).pipe(
          Effect.timeoutOrElse({ duration: submitWait, orElse: () => Effect.fail(GatewayErrors.unavailable) })
        )
        return yield* accepted(id, replayed)
      }).pipe(
        Effect.catchTags({
          SqlError: GatewayErrors.unavailableOn,
          RequestIdConflict: () => Effect.fail(GatewayErrors.idempotencyKeyReused),
          InvalidCardInput: (error) => Effect.fail(GatewayErrors.invalidRequest(error.message.replace(/^card\./, ""))),
          InvalidRequest: (error) => Effect.fail(GatewayErrors.invalidRequest(error.message))
        }),
        Effect.withSpan("gcx.gateway.submit", { attributes: { "gcx.gateway.key_id": caller.id } }, {
          captureStackTrace: false
        })
      )

    const owned: Service["owned"] = (caller, id) => {
      const known = owners.get(id)
      if (known !== undefined) return known === caller.id ? Effect.void : Effect.fail(GatewayErrors.notFound)
      return sql<{ readonly key_id: string }>`SELECT key_id FROM ${sql(table)} WHERE request_id = ${id}`.pipe(
        Effect.catchTag("SqlError", GatewayErrors.unavailableOn),
        Effect.flatMap((rows) => {
          if (rows.length !== 1) return Effect.fail(GatewayErrors.notFound)
          remember(id, rows[0]!.key_id)
          return rows[0]!.key_id === caller.id ? Effect.void : Effect.fail(GatewayErrors.notFound)
        })
      )
    }

    const view: Service["view"] = (caller, id) =>
      owned(caller, id).pipe(
        Effect.andThen(log.read(id, 0).pipe(Effect.catchTag("SqlError", GatewayErrors.unavailableOn))),
        Effect.map((entries) => viewOf(id, entries)),
        Effect.withSpan("gcx.gateway.view", { attributes: { "gcx.gateway.key_id": caller.id } }, {
          captureStackTrace: false
        })
      )

    return GatewayQuotes.of({ requestId, submit, owned, view })
  })

/**
 * How long a POST waits for the durable quotes' database when it cannot be reached (the submit
 * waits through an outage) before it is answered 503 `unavailable`.
 */
export const submitWait: Duration.Duration = Duration.seconds(10)

/** A data key given in base64, parsed; a malformed one is a defect. */
const parseOrThrow = (key: string | Redacted.Redacted<string>, sealing = true): CardCipher.DataKey =>
  Result.getOrThrowWith(
    CardCipher.parseKey(Redacted.isRedacted(key) ? Redacted.value(key) : key, { sealing }),
    (reason) => new Error(`GatewayQuotes: the data key ${reason}`)
  )

/**
 * The service with quote ids derived from the data key given in base64, and
 * the previous key of a rotation, if any (a malformed key is a defect).
 */
export const layer = (
  dataKey: string | Redacted.Redacted<string>,
  previous?: string | Redacted.Redacted<string>
): Layer.Layer<
  GatewayQuotes,
  SqlError.SqlError | UnknownDataKey,
  DurableQuotes.DurableQuotes | EventLog.EventLog | SqlClient.SqlClient
> =>
  Layer.effect(
    GatewayQuotes,
    Effect.suspend(() =>
      make(parseOrThrow(dataKey), previous === undefined ? undefined : parseOrThrow(previous, false))
    )
  )

/** The service with quote ids derived from `GCX_DATA_KEY` and `GCX_DATA_KEY_PREVIOUS` (`CardCipher.keysConfig`). */
export const layerConfig: Layer.Layer<
  GatewayQuotes,
  SqlError.SqlError | Config.ConfigError | UnknownDataKey,
  DurableQuotes.DurableQuotes | EventLog.EventLog | SqlClient.SqlClient
> = Layer.effect(
  GatewayQuotes,
  Effect.flatMap(CardCipher.keysConfig, (keys) => make(keys.current, Option.getOrUndefined(keys.previous)))
)
