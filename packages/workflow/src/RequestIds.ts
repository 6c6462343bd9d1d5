/**
 * The requestIds of durable quotes, in the deployment's database: a requestId
 * belongs to one card (Stripe's idempotency keys are the model).
 *
 * One row per requestId in `gcx_request_ids`: the keyed fingerprint of its
 * card (`CardCipher.fingerprint`, never the card) and the id of the data key
 * it was made under, the execution id of its workflow, whether its card could
 * be opened, and the durable counter of its POST attempts.
 *
 * - `register` records a requestId with its card, or finds it recorded with
 *   the same card (the same quote), or fails with `RequestIdConflict`. The
 *   execution id is drawn at random when the requestId is first recorded, so
 *   it cannot be derived from the requestId: a caller of the cluster's
 *   protocol that knows a requestId can neither read its quote's outcome nor
 *   run a workflow in its place.
 * - `nextAttempt` is the counter of the submit activity, and admits only the
 *   workflow recorded for the requestId: a workflow run under another
 *   execution id (not submitted through `DurableQuotes`) sends no POST.
 * - `release`: the recorded workflow could not open its card (not sealed by
 *   this deployment's keys). The requestId stays recorded (its `result` is
 *   that `CardDecryptionError`) but is free: the next `register` of it, with
 *   any card, records a new workflow.
 *
 * - `claim` / `settle`: the requestId of a card's unsettled quote, recorded
 *   against the card's fingerprint in `gcx_card_quotes`, for a caller that
 *   quotes a card without choosing a requestId and must resume the same quote
 *   after an interruption (`gcx quote --durable`): `claim` returns the
 *   requestId recorded for the card, or records a fresh one; `settle`, once
 *   the outcome has been shown (`settleRequest`: shown by its requestId),
 *   forgets it, and the next `claim` of that card starts a new quote.
 *
 * Key rotation: a fingerprint made under the previous data key is compared
 * under that key (`GCX_DATA_KEY_PREVIOUS`). One made under a key this node no
 * longer has cannot be compared: the requestId is refused (`RequestIdConflict`),
 * never taken for another card's.
 */
import type * as Card from "@gcx/core/Card"
import { RequestIdConflict } from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import * as CardFingerprint from "@gcx/poller/CardFingerprint"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import * as CardCipher from "./CardCipher.js"

/** The requestIds service. */
export interface Service {
  /**
   * Records `requestId` for `card` and returns the execution id of its
   * workflow; the same requestId with the same card returns the same one.
   * Fails with `RequestIdConflict` when the requestId is recorded with
   * another card (or under a data key this node does not have).
   */
  readonly register: (
    requestId: string,
    card: Card.Card
  ) => Effect.Effect<string, RequestIdConflict | SqlError.SqlError>
  /** The execution id recorded for `requestId`, if it was ever recorded. */
  readonly lookup: (requestId: string) => Effect.Effect<Option.Option<string>, SqlError.SqlError>
  /**
   * Records, durably, that one more POST attempt of `requestId` is about to
   * be sent by the workflow `executionId`, and returns its `previousAttempts`
   * (0 for the first attempt ever); none when `executionId` is not the
   * workflow recorded for `requestId`.
   */
  readonly nextAttempt: (
    requestId: string,
    executionId: string
  ) => Effect.Effect<Option.Option<number>, SqlError.SqlError>
  /**
   * The workflow `executionId` of `requestId` could not open its card: the
   * requestId is free for the next `register`, for any card when it was never
   * POSTed, else for its own card only. Does nothing when `executionId` is not
   * the workflow recorded for `requestId`.
   */
  readonly release: (requestId: string, executionId: string) => Effect.Effect<void, SqlError.SqlError>
  /**
   * The requestId of the card's unsettled quote (recorded by an earlier
   * `claim`, under the current or the previous data key), or a fresh one,
   * recorded against the card's fingerprint.
   */
  readonly claim: (card: Card.Card) => Effect.Effect<string, SqlError.SqlError>
  /** Forgets the card's claim on `requestId` (its outcome was shown): the next `claim` of the card gives a new one. */
  readonly settle: (card: Card.Card, requestId: string) => Effect.Effect<void, SqlError.SqlError>
  /** Forgets the claim on `requestId`, whichever card made it (its outcome was shown by requestId). */
  readonly settleRequest: (requestId: string) => Effect.Effect<void, SqlError.SqlError>
}

/** The requestIds service. */
export class RequestIds extends Context.Service<RequestIds, Service>()("@gcx/workflow/RequestIds") {}

/** The table of the requestIds. */
export const table = "gcx_request_ids"

/** The table of the cards' unsettled quotes (`claim`). */
export const claimsTable = "gcx_card_quotes"

interface Row {
  readonly execution_id: string
  readonly key_id: string
  readonly fingerprint: string
  readonly opened: number | boolean
  readonly attempts: number | string
}

/** How many times `register` reads a row again that changed under it (another node registered or freed it). */
const maxRaces = 3

/** The requestIds over the `SqlClient` and the cipher in context; creates the table when it is missing. */
export const make: Effect.Effect<Service, SqlError.SqlError, SqlClient.SqlClient | CardCipher.CardCipher> = Effect
  .gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cipher = yield* CardCipher.CardCipher
    // Nodes started at once on a new PostgreSQL database race to create the table, and the loser's
    // `CREATE TABLE IF NOT EXISTS` can fail in the catalog; tried again, it finds the table.
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
      request_id VARCHAR(64) PRIMARY KEY,
      execution_id VARCHAR(32) NOT NULL,
      key_id VARCHAR(16) NOT NULL,
      fingerprint VARCHAR(64) NOT NULL,
      opened SMALLINT NOT NULL DEFAULT 1,
      attempts INTEGER NOT NULL DEFAULT 0
    )`.pipe(
      Effect.andThen(sql`CREATE TABLE IF NOT EXISTS ${sql(claimsTable)} (
        fingerprint VARCHAR(64) PRIMARY KEY,
        request_id VARCHAR(64) NOT NULL
      )`),
      Effect.retry({ times: 3, schedule: Schedule.spaced("100 millis") })
    )

    const sameCard = (row: Row, card: Card.Card): boolean => {
      const fingerprint = cipher.fingerprintOf(row.key_id)
      return fingerprint !== undefined && CardFingerprint.equals(fingerprint.of(card), row.fingerprint)
    }

    const register: Service["register"] = (requestId, card) =>
      Effect.gen(function*() {
        const fingerprint = cipher.fingerprint.of(card)
        const keyId = cipher.fingerprint.keyId
        for (let race = 0; race < maxRaces; race++) {
          const executionId = Crypto.randomBytes(16).toString("hex")
          const inserted = yield* sql<{ readonly execution_id: string }>`INSERT INTO ${sql(table)}
            (request_id, execution_id, key_id, fingerprint) VALUES (${requestId}, ${executionId}, ${keyId}, ${fingerprint})
            ON CONFLICT (request_id) DO NOTHING RETURNING execution_id`
          if (inserted.length > 0) return executionId
          const [row] = yield* sql<Row>`SELECT execution_id, key_id, fingerprint, opened, attempts FROM ${sql(table)}
            WHERE request_id = ${requestId}`
          if (row === undefined) continue
          if (Number(row.opened) !== 0) {
            if (sameCard(row, card)) return row.execution_id
            return yield* new RequestIdConflict({ requestId })
          }
          // Its card could not be opened: the requestId is free, for this card or any other; but once
          // it was POSTed, for its card only: the service would answer another card with that card's
          // transaction (the attempts are counted on).
          const attempts = Number(row.attempts)
          if (attempts > 0 && !sameCard(row, card)) return yield* new RequestIdConflict({ requestId })
          const replaced = yield* sql<{ readonly execution_id: string }>`UPDATE ${sql(table)}
            SET execution_id = ${executionId}, key_id = ${keyId}, fingerprint = ${fingerprint}, opened = 1
            WHERE request_id = ${requestId} AND execution_id = ${row.execution_id} AND opened = 0
            AND attempts = ${attempts}
            RETURNING execution_id`
          if (replaced.length > 0) return executionId
        }
        // Changed under us at every read: another node is registering it at this moment.
        return yield* new RequestIdConflict({ requestId })
      })

    const lookup: Service["lookup"] = (requestId) =>
      sql<{ readonly execution_id: string }>`SELECT execution_id FROM ${sql(table)} WHERE request_id = ${requestId}`
        .pipe(Effect.map((rows) => Option.fromNullishOr(rows[0]?.execution_id)))

    // One statement, committed on its own: the update returns the count including this attempt.
    const nextAttempt: Service["nextAttempt"] = (requestId, executionId) =>
      sql<{ readonly attempts: number }>`UPDATE ${sql(table)} SET attempts = attempts + 1
        WHERE request_id = ${requestId} AND execution_id = ${executionId} RETURNING attempts`.pipe(
        Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(Number(rows[0]!.attempts) - 1))
      )

    const release: Service["release"] = (requestId, executionId) =>
      Effect.asVoid(
        sql`UPDATE ${sql(table)} SET opened = 0 WHERE request_id = ${requestId} AND execution_id = ${executionId}`
      )

    /** The card's fingerprints under every data key of the cipher, the current one first. */
    const fingerprintsOf = (card: Card.Card): ReadonlyArray<string> =>
      cipher.fingerprints.map((fingerprint) => fingerprint.of(card))

    const claimed = (prints: ReadonlyArray<string>) =>
      sql<{ readonly request_id: string }>`SELECT request_id FROM ${sql(claimsTable)}
        WHERE ${sql.in("fingerprint", prints)}`.pipe(Effect.map((rows) => Option.fromNullishOr(rows[0]?.request_id)))

    const claim: Service["claim"] = (card) =>
      Effect.gen(function*() {
        const prints = fingerprintsOf(card)
        const found = yield* claimed(prints)
        if (Option.isSome(found)) return found.value
        const requestId = Ids.makeRequestId()
        const inserted = yield* sql<{ readonly request_id: string }>`INSERT INTO ${sql(claimsTable)}
          (fingerprint, request_id) VALUES (${prints[0]!}, ${requestId})
          ON CONFLICT (fingerprint) DO NOTHING RETURNING request_id`
        if (inserted.length > 0) return requestId
        // claimed by another process at this moment: its requestId is this card's
        return Option.getOrElse(yield* claimed(prints), () => requestId)
      })

    const settle: Service["settle"] = (card, requestId) =>
      Effect.asVoid(
        sql`DELETE FROM ${sql(claimsTable)} WHERE ${sql.in("fingerprint", fingerprintsOf(card))}
          AND request_id = ${requestId}`
      )

    const settleRequest: Service["settleRequest"] = (requestId) =>
      Effect.asVoid(sql`DELETE FROM ${sql(claimsTable)} WHERE request_id = ${requestId}`)

    return RequestIds.of({ register, lookup, nextAttempt, release, claim, settle, settleRequest })
  })

/** The requestIds as a layer over the `SqlClient` and the cipher in context. */
export const layer: Layer.Layer<RequestIds, SqlError.SqlError, SqlClient.SqlClient | CardCipher.CardCipher> = Layer
  .effect(RequestIds, make)
