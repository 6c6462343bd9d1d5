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
import { previousSecretsTable, sealingContext, type WebhookRow, webhooksTable } from "./keyTables.js"

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
}

/** How many times a rotation overtaken by another is made again before it dies. */
const rotationTries = 5

/** The endpoints over `sql`, their secrets sealed and opened with `cipher`. */
export const make = (sql: SqlClient.SqlClient, cipher: CardCipher.Service) => {
  /** A secret of endpoint `row.id`, opened; none (with a warning naming the endpoint) when no data key opens it. */
  const open = (row: WebhookRow, sealed: string) =>
    cipher.openText(sealed, sealingContext(row.id)).pipe(
      Effect.map((opened) => Option.some(webhookSecret(Redacted.value(opened)))),
      Effect.catchTag("UnsealError", (error) =>
        Effect.as(
          Effect.logWarning(
            `gateway: the webhook ${row.id} of the API key ${row.key_id} is left out: ${error.message}`
          ),
          Option.none()
        ))
    )

  const endpointOf = (row: EndpointRow) =>
    Effect.gen(function*() {
      const secret = yield* open(row, row.secret_sealed)
      if (Option.isNone(secret)) return Option.none<WebhookEndpoint>()
      const previous = row.previous_sealed === null || row.previous_expires_at === null
        ? Option.none()
        : yield* open(row, row.previous_sealed)
      return Option.some<WebhookEndpoint>({
        id: row.id,
        url: row.url,
        secret: secret.value,
        ...(Option.isSome(previous)
          ? { previous: { secret: previous.value, expiresAt: Number(row.previous_expires_at) } }
          : {})
      })
    })

  /** The endpoints of key `keyId`, oldest first, each with its previous secret while it signs. */
  const ofKey = (keyId: string) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        sql<EndpointRow>`SELECT w.id, w.key_id, w.url, w.secret_sealed, p.secret_sealed AS previous_sealed,
          p.expires_at AS previous_expires_at
        FROM ${sql(webhooksTable)} w
        LEFT JOIN ${sql(previousSecretsTable)} p ON p.webhook_id = w.id AND p.expires_at > ${now}
        WHERE w.key_id = ${keyId} ORDER BY w.created_at, w.id`.pipe(
          Effect.flatMap(Effect.forEach(endpointOf)),
          Effect.map(Arr.getSomes)
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
   * for `overlapMillis` (none when 0), in place of any earlier previous one.
   * None when no such endpoint exists. A rotation that another overtook
   * (between its read and its write) is made again over the secret that one
   * left, so that no secret handed out is lost.
   */
  const rotate = (webhookId: string, overlapMillis: number): Effect.Effect<Option.Option<Rotated>, SqlError.SqlError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const secret = generateWebhookSecret()
      const once = sql.withTransaction(Effect.gen(function*() {
        const [row] = yield* sql<WebhookRow>`SELECT id, key_id, url, secret_sealed FROM ${sql(webhooksTable)}
          WHERE id = ${webhookId}`
        if (row === undefined) return "missing" as const
        const sealed = yield* cipher.sealText(Redacted.value(secret), sealingContext(row.id))
        // only over the secret read: another rotation in between makes this one start again
        const updated = yield* sql`UPDATE ${sql(webhooksTable)} SET secret_sealed = ${sealed}
          WHERE id = ${row.id} AND secret_sealed = ${row.secret_sealed} RETURNING id`
        if (updated.length === 0) return "overtaken" as const
        const expiresAt = now + overlapMillis
        yield* overlapMillis > 0
          ? sql`INSERT INTO ${sql(previousSecretsTable)} (webhook_id, secret_sealed, expires_at)
              VALUES (${row.id}, ${row.secret_sealed}, ${expiresAt})
              ON CONFLICT (webhook_id) DO UPDATE SET secret_sealed = excluded.secret_sealed,
                expires_at = excluded.expires_at`
          : sql`DELETE FROM ${sql(previousSecretsTable)} WHERE webhook_id = ${row.id}`
        return {
          keyId: row.key_id,
          endpoint: { id: row.id, url: row.url, secret },
          previousUntil: overlapMillis > 0 ? Option.some(expiresAt) : Option.none()
        } satisfies Rotated
      }))
      const tried = (left: number): Effect.Effect<Option.Option<Rotated>, SqlError.SqlError> =>
        Effect.flatMap(once, (result) =>
          result === "missing"
            ? Effect.succeedNone
            : result !== "overtaken"
            ? Effect.succeedSome(result)
            : left > 1
            ? tried(left - 1)
            : Effect.die(new Error(`the secret of the webhook ${webhookId} is being rotated by others: try again`)))
      return yield* tried(rotationTries)
    })

  return { ofKey, insert, rotate }
}
