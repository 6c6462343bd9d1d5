/**
 * The webhook endpoints of `ApiKeys`: made with a fresh secret, read with
 * their secrets opened, and their secrets rotated. A rotation keeps the
 * secret it replaces for an overlap (`previousSecretsTable`, one per
 * endpoint), during which deliveries are signed with both, so that receivers
 * can move to the new one without refusing a delivery.
 */
import type * as CardCipher from "@gcx/workflow/CardCipher"
import * as Arr from "effect/Array"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Base64Url from "effect/encoding/Base64Url"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import type { WebhookEndpoint } from "../ApiKeys.js"
import {
  keysTable,
  type PreviousSecretRow,
  previousSecretsTable,
  sealingContext,
  type WebhookRow,
  webhooksTable
} from "./keyTables.js"

/** `prefix` and 43 base64url characters (32 random bytes). */
export const randomToken = (prefix: string): string => `${prefix}${Base64Url.encode(Crypto.randomBytes(32))}`

/** A public id: `prefix` and 16 hex digits. */
export const newId = (prefix: string): string => `${prefix}${Crypto.randomBytes(8).toString("hex")}`

const webhookSecret = (secret: string) => Redacted.make(secret, { label: "WebhookSecret" })

/** A fresh webhook secret (`whsec_` + 43 base64url characters). */
export const generateWebhookSecret = (): Redacted.Redacted<string> => webhookSecret(randomToken("whsec_"))

/** A row of the webhooks' table with the previous secret that still signs, if any. */
interface EndpointRow extends WebhookRow {
  readonly previous_sealed: string | null
  readonly previous_expires_at: number | string | bigint | null
}

/** What a rotation made: the endpoint with its new secret, and until when the one it replaced signs too. */
export interface Rotated {
  readonly keyId: string
  readonly endpoint: WebhookEndpoint
  /** When the replaced secret stops signing (ms since the epoch); none when it stopped at once. */
  readonly previousUntil: Option.Option<number>
  /** Whether an earlier rotation's replaced secret, which still signed, stopped signing with this one. */
  readonly endedEarlierOverlap: boolean
  /** Whether the endpoint's key is revoked (the outcomes of its quotes are still delivered). */
  readonly keyRevoked: boolean
}

/** An endpoint as listed: no secret; until when its replaced secret signs, if it still does. */
export interface Listed {
  readonly id: string
  readonly keyId: string
  readonly url: string
  readonly previousUntil: Option.Option<number>
}

/** The endpoints over `sql`, their secrets sealed and opened with `cipher`. */
export const make = (sql: SqlClient.SqlClient, cipher: CardCipher.Service) => {
  /** A secret of endpoint `row.id`, opened; none (with a warning naming the endpoint) when no data key opens it. */
  const open = (row: WebhookRow, sealed: string, leftOut: string) =>
    cipher.openText(sealed, sealingContext(row.id)).pipe(
      Effect.map((opened) => Option.some(webhookSecret(Redacted.value(opened)))),
      Effect.catchTag("UnsealError", (error) =>
        Effect.as(
          Effect.logWarning(
            `gateway: the webhook ${row.id} of the API key ${row.key_id}: ${leftOut}: ${error.message}`
          ),
          Option.none()
        ))
    )

  const endpointOf = (row: EndpointRow) =>
    Effect.gen(function*() {
      const secret = yield* open(row, row.secret_sealed, "left out (its deliveries wait for a data key that opens it)")
      if (Option.isNone(secret)) return Option.none<WebhookEndpoint>()
      const previous = row.previous_sealed === null || row.previous_expires_at === null
        ? Option.none()
        : yield* open(row, row.previous_sealed, "its replaced secret no longer signs")
      return Option.some<WebhookEndpoint>({
        id: row.id,
        url: row.url,
        secret: secret.value,
        ...(Option.isSome(previous)
          ? { previous: { secret: previous.value, expiresAt: Number(row.previous_expires_at) } }
          : {})
      })
    })

  /**
   * The endpoints of key `keyId`, oldest first, each with its previous secret
   * while it signs; and the ids of those left out, whose secret no data key
   * of this node opens.
   */
  const ofKey = (keyId: string) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        sql<EndpointRow>`SELECT w.id, w.key_id, w.url, w.secret_sealed, p.secret_sealed AS previous_sealed,
          p.expires_at AS previous_expires_at
        FROM ${sql(webhooksTable)} w
        LEFT JOIN ${sql(previousSecretsTable)} p ON p.webhook_id = w.id AND p.expires_at > ${now}
        WHERE w.key_id = ${keyId} ORDER BY w.created_at, w.id`.pipe(
          Effect.flatMap(Effect.forEach((row) => Effect.map(endpointOf(row), (endpoint) => ({ row, endpoint })))),
          Effect.map((read) => ({
            webhooks: Arr.getSomes(read.map(({ endpoint }) => endpoint)),
            leftOut: read.flatMap(({ endpoint, row }) => Option.isNone(endpoint) ? [row.id] : [])
          }))
        )
    )

  /** Inserts an endpoint of `keyId` with a fresh secret, sealed. */
  const insert = (keyId: string, url: string, createdAt: number) =>
    Effect.gen(function*() {
      const id = newId("wh_")
      const secret = generateWebhookSecret()
      const sealed = yield* cipher.sealText(Redacted.value(secret), sealingContext(id))
      yield* sql`INSERT INTO ${sql(webhooksTable)} (id, key_id, url, secret_sealed, created_at)
        VALUES (${id}, ${keyId}, ${url}, ${sealed}, ${createdAt})`
      return { id, url, secret } satisfies WebhookEndpoint
    })

  /**
   * Gives endpoint `webhookId` a fresh secret; the one it replaces signs too
   * for `overlapMillis` (none when 0), in place of any earlier previous one
   * (the last rotation wins). None when no such endpoint exists. The
   * endpoint's row is locked for the transaction (`FOR UPDATE` on PostgreSQL;
   * SQLite's writes are serialized), so rotations at once run one after the
   * other: each replaces the secret the one before it made.
   */
  const rotate = (webhookId: string, overlapMillis: number): Effect.Effect<Option.Option<Rotated>, SqlError.SqlError> =>
    Effect.gen(function*() {
      const secret = generateWebhookSecret()
      return yield* sql.withTransaction(Effect.gen(function*() {
        // the endpoint's row locked first, then what a rotation before this one left (read after its commit)
        const lock = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE OF w"), orElse: () => sql.literal("") })
        const [row] = yield* sql<WebhookRow & { readonly revoked_at: unknown }>`SELECT w.id, w.key_id, w.url,
            w.secret_sealed, k.revoked_at
          FROM ${sql(webhooksTable)} w JOIN ${sql(keysTable)} k ON k.id = w.key_id
          WHERE w.id = ${webhookId} ${lock}`
        if (row === undefined) return Option.none()
        const now = yield* Clock.currentTimeMillis
        const [previous] = yield* sql<Pick<PreviousSecretRow, "expires_at">>`SELECT expires_at
          FROM ${sql(previousSecretsTable)} WHERE webhook_id = ${row.id}`
        const sealed = yield* cipher.sealText(Redacted.value(secret), sealingContext(row.id))
        yield* sql`UPDATE ${sql(webhooksTable)} SET secret_sealed = ${sealed} WHERE id = ${row.id}`
        const expiresAt = now + overlapMillis
        yield* overlapMillis > 0
          ? sql`INSERT INTO ${sql(previousSecretsTable)} (webhook_id, secret_sealed, expires_at)
              VALUES (${row.id}, ${row.secret_sealed}, ${expiresAt})
              ON CONFLICT (webhook_id) DO UPDATE SET secret_sealed = excluded.secret_sealed,
                expires_at = excluded.expires_at`
          : sql`DELETE FROM ${sql(previousSecretsTable)} WHERE webhook_id = ${row.id}`
        return Option.some(
          {
            keyId: row.key_id,
            endpoint: { id: row.id, url: row.url, secret },
            previousUntil: overlapMillis > 0 ? Option.some(expiresAt) : Option.none(),
            endedEarlierOverlap: previous !== undefined && Number(previous.expires_at) > now,
            keyRevoked: row.revoked_at !== null
          } satisfies Rotated
        )
      }))
    })

  /** Every endpoint, oldest first: no secret, and until when its replaced secret signs, if it still does. */
  const listed = Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      sql<Omit<WebhookRow, "secret_sealed"> & { readonly previous_until: number | string | bigint | null }>`SELECT
        w.id, w.key_id, w.url, p.expires_at AS previous_until FROM ${sql(webhooksTable)} w
      LEFT JOIN ${sql(previousSecretsTable)} p ON p.webhook_id = w.id AND p.expires_at > ${now}
      ORDER BY w.created_at, w.id`.pipe(
        Effect.map((rows) =>
          rows.map(({ id, key_id, previous_until, url }): Listed => ({
            id,
            keyId: key_id,
            url,
            previousUntil: previous_until === null ? Option.none() : Option.some(Number(previous_until))
          }))
        )
      )
  )

  return { ofKey, insert, rotate, listed }
}
