/**
 * The gateway's callers: API keys, kept in the deployment's database as
 * SHA-256 hashes only, each with its rate limit and its webhook endpoints.
 *
 * - A key is `gcx_sk_` and 43 base64url characters (32 random bytes). It is
 *   shown once, by `create`; the table `gcx_gateway_keys` keeps the SHA-256
 *   hex of the whole key (the key is high-entropy: no password hash needed),
 *   under a unique index that `authenticate` looks it up by. A presented key
 *   that is not of that form is refused before any query.
 * - A webhook endpoint's secret is `whsec_` and 43 base64url characters. The
 *   table `gcx_gateway_webhooks` keeps it sealed with the data key
 *   (`CardCipher.sealText`: AES-256-GCM under `GCX_DATA_KEY`, the row's id as
 *   additional data), opened by `authenticate` and `find`. A secret that no
 *   data key of this node opens leaves its endpoint out, with a warning (its
 *   deliveries wait). At its start, the service refuses a table whose secrets
 *   were sealed under neither key (`CardCipher.UnsealError`), and seals again
 *   under `GCX_DATA_KEY` the secrets sealed under `GCX_DATA_KEY_PREVIOUS` (a
 *   rotation), unless told not to (`Options.resealWebhooks`).
 * - A rotation of an endpoint's secret (`rotateWebhookSecret`) keeps the
 *   secret it replaces, sealed the same way, in `gcx_gateway_webhook_previous_secrets`
 *   until its overlap ends: deliveries are signed with both meanwhile.
 * - `authenticate` keeps the callers it found for `cacheTtl` (5 s by default)
 *   in this process's memory, by the key's hash: a revoked key is refused by
 *   every gateway at most that long after `revoke` (at once by the process that
 *   revoked it). The well-formed keys it did not find are kept as unknown for
 *   as long, apart from the callers and fewer of them (a flood of random keys
 *   never pushes a caller out): a client that keeps sending a revoked or
 *   mistyped key costs the database about one query per `cacheTtl` on each
 *   gateway, not one per request. A key is never kept as unknown once made:
 *   nobody could present it before, and `create` forgets it in its process.
 * - The tables are created when missing, on SQLite and on PostgreSQL alike.
 *   Scaled out, they are in the deployment's PostgreSQL. Embedded, they are in
 *   a SQLite file of their own (`layerFile`, `GCX_GATEWAY_KEYS_FILE`, default
 *   `gateway-keys.db` beside the quotes' file), which other processes may
 *   open while the gateway runs (the quotes' file is one process's alone):
 *   `gcx serve keys` creates and revokes keys while `gcx serve` serves. A failure of the database in `authenticate` or
 *   `find` is a defect (the gateway answers 500); `create`, `list` and `revoke`
 *   fail with the `SqlError`.
 */
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as Embedded from "@gcx/workflow/Embedded"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import * as Path from "node:path"
import * as CallerCache from "./internal/callerCache.js"
import * as Endpoints from "./internal/endpoints.js"
import * as KeyTables from "./internal/keyTables.js"
import { createTables, type KeyRow, resealWebhooks, utc } from "./internal/keyTables.js"
import * as KeySettings from "./KeySettings.js"
import {
  type CreateOptions,
  type InvalidKeySettings,
  validate,
  validateSecretOverlap,
  validateWebhookUrl
} from "./KeySettings.js"

/** An endpoint that receives the terminal outcomes of a key's quotes. */
export interface WebhookEndpoint {
  readonly id: string
  readonly url: string
  /** The secret that signs its deliveries (`Gcx-Signature`). */
  readonly secret: Redacted.Redacted<string>
  /**
   * The secret its last rotation replaced, which signs its deliveries too
   * until `expiresAt` (milliseconds since the epoch); absent after it.
   */
  readonly previous?: { readonly secret: Redacted.Redacted<string>; readonly expiresAt: number } | undefined
}

/** What `rotateWebhookSecret` made: the endpoint with its new secret (shown once), its key, and until when the replaced secret signs. */
export interface RotatedSecret {
  readonly keyId: string
  readonly endpoint: WebhookEndpoint
  /** When the replaced secret stops signing deliveries; none when it stopped at once (an overlap of 0). */
  readonly previousUntil: Option.Option<DateTime.Utc>
  /** Whether the secret an earlier rotation replaced, which still signed, stopped signing with this one. */
  readonly endedEarlierOverlap: boolean
  /** Whether the endpoint's key is revoked: the outcomes of the quotes it submitted are still delivered. */
  readonly keyRevoked: boolean
}

/** How long a replaced webhook secret signs deliveries beside the new one, unless told otherwise: 24 hours. */
export const defaultSecretOverlap: Duration.Duration = KeySettings.defaultSecretOverlap

/** A caller, as authenticated: never the key itself. */
export interface ApiKey {
  /** A public id (`key_…`), safe to log. */
  readonly id: string
  readonly name: string
  /** Sustained requests a second, and the burst above it. */
  readonly ratePerSecond: number
  readonly burst: number
  readonly webhooks: ReadonlyArray<WebhookEndpoint>
  /**
   * The ids of its endpoints left out of `webhooks`: their secret no data key
   * of this node opens (a deployment's keys mistaken). Their deliveries wait,
   * retried, until a node that opens them makes them.
   */
  readonly webhooksLeftOut?: ReadonlyArray<string> | undefined
}

/** The presented key is missing, malformed, unknown or revoked. Never names the key. */
export class UnknownApiKey extends Schema.TaggedError<UnknownApiKey>()("UnknownApiKey", {}) {
  override get message(): string {
    return "the API key is missing, unknown or revoked"
  }
}

/**
 * New webhook secrets would be sealed under a `GCX_DATA_KEY` the deployment
 * has not moved to: some are still sealed under `GCX_DATA_KEY_PREVIOUS` (an
 * administration command whose shell has the keys the wrong way round, or a
 * rotation no gateway has started with yet). Only with `resealWebhooks: false`.
 */
export class StaleDataKey extends Schema.TaggedError<StaleDataKey>()("StaleDataKey", {
  /** The webhook secrets still sealed under GCX_DATA_KEY_PREVIOUS. */
  sealedUnderPrevious: Schema.Number
}) {
  override get message(): string {
    return `${this.sealedUnderPrevious} webhook secrets are sealed under GCX_DATA_KEY_PREVIOUS, so new ones would be ` +
      "sealed under a GCX_DATA_KEY the deployment has not moved to: run with the deployment's data key as " +
      "GCX_DATA_KEY alone, or, to rotate, start gcx serve with both keys first (it seals them again)"
  }
}

/** A key just created: the key and the webhook secrets are here only, never again. */
export interface Created {
  /** The key, for the caller's `Authorization: Bearer`; only its hash is kept. */
  readonly key: Redacted.Redacted<string>
  /** The caller, with its endpoints and their secrets. */
  readonly apiKey: ApiKey
  readonly createdAt: DateTime.Utc
}

/** A key as listed: no key, no secret. */
export interface Listed {
  readonly id: string
  readonly name: string
  readonly ratePerSecond: number
  readonly burst: number
  /** Its endpoints, each with, while a rotation's overlap lasts, when its replaced secret stops signing. */
  readonly webhooks: ReadonlyArray<{
    readonly id: string
    readonly url: string
    readonly previousUntil: Option.Option<DateTime.Utc>
  }>
  readonly createdAt: DateTime.Utc
  readonly revokedAt: Option.Option<DateTime.Utc>
}

/** What `revoke` did: revoked it now, found it revoked already, or found no key of that id. */
export type Revocation = "revoked" | "alreadyRevoked" | "unknown"

/** The API keys service. */
export interface Service {
  /** The caller a presented key belongs to. */
  readonly authenticate: (presented: Redacted.Redacted<string>) => Effect.Effect<ApiKey, UnknownApiKey>
  /** A caller by its public id (for webhook delivery), revoked ones included. */
  readonly find: (id: string) => Effect.Effect<Option.Option<ApiKey>>
  /** Makes a key (and its webhook endpoints' secrets), returned once. */
  readonly create: (
    options: CreateOptions
  ) => Effect.Effect<Created, InvalidKeySettings | StaleDataKey | SqlError.SqlError>
  /** Adds an endpoint to the key `keyId`; none when no such key exists. Its secret is returned once. */
  readonly addWebhook: (
    keyId: string,
    url: string
  ) => Effect.Effect<Option.Option<WebhookEndpoint>, InvalidKeySettings | StaleDataKey | SqlError.SqlError>
  /**
   * Gives webhook endpoint `webhookId` a fresh secret, returned once; the
   * secret it replaces signs its deliveries too for `overlap` (default 24 h,
   * at most 7 days; 0 ends it at once, for a leaked secret), so that its
   * receiver can move to the new one without refusing a delivery. A second
   * rotation during an overlap ends the first one's. None when no such
   * endpoint exists.
   */
  readonly rotateWebhookSecret: (
    webhookId: string,
    options?: { readonly overlap?: Duration.Input | undefined }
  ) => Effect.Effect<Option.Option<RotatedSecret>, InvalidKeySettings | StaleDataKey | SqlError.SqlError>
  /** Every key, revoked ones included, oldest first: never a key or a secret. */
  readonly list: Effect.Effect<ReadonlyArray<Listed>, SqlError.SqlError>
  /** Revokes the key `id`: `authenticate` refuses it from now on (other processes: within `cacheTtl`). */
  readonly revoke: (id: string) => Effect.Effect<Revocation, SqlError.SqlError>
}

/** The API keys service. */
export class ApiKeys extends Context.Service<ApiKeys, Service>()("@gcx/gateway/ApiKeys") {}

/** The table of the keys. */
export const keysTable = KeyTables.keysTable

/** The table of the webhook endpoints. */
export const webhooksTable = KeyTables.webhooksTable

/** The table of the webhook secrets replaced by a rotation, sealed, each until its overlap ends. */
export const previousSecretsTable = KeyTables.previousSecretsTable

/** How long `authenticate` remembers a caller by default (see the module's doc). */
export const defaultCacheTtl: Duration.Duration = Duration.seconds(5)

/** What keys look like: the prefix, then 43 base64url characters (32 bytes). */
export const keyPattern = /^gcx_sk_[A-Za-z0-9_-]{43}$/

/** A new key: `gcx_sk_` and 43 base64url characters. */
export const generateKey = (): Redacted.Redacted<string> =>
  Redacted.make(Endpoints.randomToken("gcx_sk_"), { label: "ApiKey" })

/** A new webhook secret: `whsec_` and 43 base64url characters. */
export const generateWebhookSecret: () => Redacted.Redacted<string> = Endpoints.generateWebhookSecret

/** The SHA-256 hex of a key: what the database keeps of it. */
export const hashKey = (key: string): string => Crypto.createHash("sha256").update(key, "utf8").digest("hex")

/** Settings of the service. */
export interface Options {
  /** How long `authenticate` remembers a caller, or a key as unknown (see the module's doc). Default 5 s; 0 remembers none. */
  readonly cacheTtl?: Duration.Input | undefined
  /**
   * Whether the start seals again under `GCX_DATA_KEY` the webhook secrets
   * sealed under `GCX_DATA_KEY_PREVIOUS` (a rotation). Default true, for a
   * gateway's start. False changes nothing at the start (the secrets open
   * under either key): for an administration command, whose shell's keys may
   * be mistaken and must not move the deployment's secrets to another key.
   */
  readonly resealWebhooks?: boolean | undefined
}

/**
 * The API keys over the `SqlClient` and the cipher in context; creates the
 * tables when missing, and seals the webhook secrets of a rotation again
 * under the current data key (`resealWebhooks`).
 */
export const make = (
  options: Options = {}
): Effect.Effect<Service, SqlError.SqlError | CardCipher.UnsealError, SqlClient.SqlClient | CardCipher.CardCipher> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cipher = yield* CardCipher.CardCipher
    const ttl = Duration.toMillis(Duration.fromInputUnsafe(options.cacheTtl ?? defaultCacheTtl))
    yield* createTables(sql)
    const stale = yield* resealWebhooks(sql, cipher, options.resealWebhooks !== false)
    /** Refuses to seal a new secret under a data key the deployment has not moved to. */
    const sealable = stale > 0 ? Effect.fail(new StaleDataKey({ sealedUnderPrevious: stale })) : Effect.void

    const cache = CallerCache.make<ApiKey>(ttl)

    const endpoints = Endpoints.make(sql, cipher)

    const apiKeyOf = (row: KeyRow) =>
      Effect.map(endpoints.ofKey(row.id), ({ leftOut, webhooks }): ApiKey => ({
        id: row.id,
        name: row.name,
        ratePerSecond: Number(row.rate_per_second),
        burst: Number(row.burst),
        webhooks,
        ...(leftOut.length > 0 ? { webhooksLeftOut: leftOut } : {})
      }))

    /** The caller of the key whose hash is `hash`, from the database, remembered (unknown too) until `now + ttl`. */
    const lookup = Effect.fnUntraced(function*(hash: string, now: number) {
      const mark = cache.mark()
      // the unique index on key_hash finds it: no comparison of key material in this process
      const [row] = yield* Effect.orDie(
        sql<KeyRow>`SELECT id, name, rate_per_second, burst, created_at, revoked_at FROM ${sql(keysTable)}
          WHERE key_hash = ${hash} AND revoked_at IS NULL`
      )
      const apiKey = row === undefined ? undefined : yield* Effect.orDie(apiKeyOf(row))
      cache.set(hash, apiKey, now, mark)
      return apiKey
    })

    const authenticate: Service["authenticate"] = Effect.fnUntraced(function*(presented) {
      const key = Redacted.value(presented)
      if (!keyPattern.test(key)) return yield* new UnknownApiKey()
      const hash = hashKey(key)
      const now = yield* Clock.currentTimeMillis
      const cached = cache.get(hash, now)
      const apiKey = cached === undefined ? yield* lookup(hash, now) : cached
      if (apiKey === undefined || apiKey === null) return yield* new UnknownApiKey()
      return apiKey
    })

    const find: Service["find"] = (id) =>
      sql<KeyRow>`SELECT id, name, rate_per_second, burst, created_at, revoked_at FROM ${sql(keysTable)}
        WHERE id = ${id}`.pipe(
        Effect.flatMap(([row]) => row === undefined ? Effect.succeedNone : Effect.asSome(apiKeyOf(row))),
        Effect.orDie
      )

    const create: Service["create"] = (options) =>
      Effect.gen(function*() {
        const settings = yield* Effect.fromResult(validate(options))
        if (settings.webhooks.length > 0) yield* sealable
        const key = generateKey()
        const hash = hashKey(Redacted.value(key))
        const id = Endpoints.newId("key_")
        const createdAt = yield* Clock.currentTimeMillis
        const webhooks = yield* sql.withTransaction(
          Effect.gen(function*() {
            yield* sql`INSERT INTO ${sql(keysTable)} (id, name, key_hash, rate_per_second, burst, created_at)
              VALUES (${id}, ${settings.name}, ${hash}, ${settings.ratePerSecond}, ${settings.burst}, ${createdAt})`
            return yield* Effect.forEach(settings.webhooks, (url) => endpoints.insert(id, url, createdAt))
          })
        )
        cache.made(hash)
        // in the order `authenticate` and `find` give them: by creation, then id
        webhooks.sort((a, b) => (a.id < b.id ? -1 : 1))
        const { name, ratePerSecond, burst } = settings
        return { key, apiKey: { id, name, ratePerSecond, burst, webhooks }, createdAt: utc(createdAt) }
      })

    const addWebhook: Service["addWebhook"] = (keyId, url) =>
      Effect.gen(function*() {
        yield* Effect.fromResult(validateWebhookUrl(url))
        yield* sealable
        const createdAt = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<{ readonly id: string }>`SELECT id FROM ${sql(keysTable)} WHERE id = ${keyId}`
          return row === undefined ? Option.none() : Option.some(yield* endpoints.insert(keyId, url, createdAt))
        }))
      })

    const rotateWebhookSecret: Service["rotateWebhookSecret"] = (webhookId, options = {}) =>
      Effect.fromResult(validateSecretOverlap(options.overlap)).pipe(
        Effect.flatMap((overlap) => Effect.andThen(sealable, endpoints.rotate(webhookId, overlap))),
        Effect.map(Option.map((rotated) => ({ ...rotated, previousUntil: Option.map(rotated.previousUntil, utc) })))
      )

    const list: Service["list"] = Effect.gen(function*() {
      const keys = yield* sql<KeyRow>`SELECT id, name, rate_per_second, burst, created_at, revoked_at
        FROM ${sql(keysTable)} ORDER BY created_at, id`
      const webhooks = yield* endpoints.listed
      return keys.map((row): Listed => ({
        id: row.id,
        name: row.name,
        ratePerSecond: Number(row.rate_per_second),
        burst: Number(row.burst),
        webhooks: webhooks.filter((webhook) => webhook.keyId === row.id).map(({ id, previousUntil, url }) => ({
          id,
          url,
          previousUntil: Option.map(previousUntil, utc)
        })),
        createdAt: utc(row.created_at),
        revokedAt: row.revoked_at === null ? Option.none() : Option.some(utc(row.revoked_at))
      }))
    })

    const revoke: Service["revoke"] = (id) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const revoked = yield* sql<{ readonly key_hash: string }>`UPDATE ${sql(keysTable)} SET revoked_at = ${now}
          WHERE id = ${id} AND revoked_at IS NULL RETURNING key_hash`
        cache.revoked(revoked.map(({ key_hash }) => key_hash))
        if (revoked.length > 0) return "revoked" as const
        const [row] = yield* sql<{ readonly id: string }>`SELECT id FROM ${sql(keysTable)} WHERE id = ${id}`
        return row === undefined ? "unknown" as const : "alreadyRevoked" as const
      })

    return ApiKeys.of({ authenticate, find, create, addWebhook, rotateWebhookSecret, list, revoke })
  })

/** The API keys as a layer over the `SqlClient` and the cipher in context (a 5 s cache). */
export const layer: Layer.Layer<
  ApiKeys,
  SqlError.SqlError | CardCipher.UnsealError,
  SqlClient.SqlClient | CardCipher.CardCipher
> = Layer.effect(ApiKeys, make())

/** The API keys with `options`, as a layer over the `SqlClient` and the cipher in context. */
export const layerWith = (
  options: Options
): Layer.Layer<ApiKeys, SqlError.SqlError | CardCipher.UnsealError, SqlClient.SqlClient | CardCipher.CardCipher> =>
  Layer.effect(ApiKeys, make(options))

/** The name of the keys' own file, in the folder of the embedded quotes' file (`.gcx/gateway-keys.db`). */
export const defaultFilename = "gateway-keys.db"

/**
 * The file of the API keys of an embedded gateway whose quotes are in
 * `databaseFile`: `GCX_GATEWAY_KEYS_FILE`, else `gateway-keys.db` in the
 * folder of `databaseFile`.
 */
export const fileConfig = (databaseFile: string): Config.Config<string> =>
  Config.String("GCX_GATEWAY_KEYS_FILE").pipe(
    Config.withDefault(Path.join(Path.dirname(databaseFile), defaultFilename))
  )

/**
 * The API keys in a SQLite file of their own (the embedded gateway): private
 * to the user as the embedded database is (folder 0700, files 0600), WAL,
 * not locked for one process (`Embedded.layerSqlite`'s `exclusive: false`),
 * every commit synced (a revocation survives a power loss).
 */
export const layerFile = (
  filename: string,
  options: Options = {}
): Layer.Layer<ApiKeys, SqlError.SqlError | CardCipher.UnsealError, CardCipher.CardCipher> =>
  layerWith(options).pipe(
    Layer.provide(Embedded.layerSqlite(filename, { exclusive: false, oneShard: false, synchronous: "FULL" }))
  )
