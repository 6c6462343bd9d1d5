/**
 * The API keys on a real database: SQLite in a temporary file (the embedded deployment) and a
 * throwaway PostgreSQL (a client-only deployment). The key and the webhook secrets are planted
 * and looked for in every row, and in the SQLite file itself.
 */
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { CardCipher } from "@gcx/workflow"
import { ConfigProvider, Context, DateTime, Deferred, Effect, Fiber, Layer, Option, Redacted, Result } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as TestPg from "../../workflow/test/utils/postgres.js"
import * as ApiKeys from "../src/ApiKeys.js"
import * as KeySettings from "../src/KeySettings.js"
import { sqliteInTemporaryFolder } from "./utils/layers.js"

const dataKey = CardCipher.generateKey()

/** SQLite in a temporary file, as the embedded deployment opens it. */
const { folder, layer: sqlite } = sqliteInTemporaryFolder("gcx-gateway-keys-")

/** A throwaway PostgreSQL. */
const postgres = TestPg.layerClient.pipe(Layer.provide(TestPg.layer()), Layer.orDie)

/** The service over the database in context, with the tests' data key (or `key`). */
const keysWith = (options: ApiKeys.Options = {}, key: string = dataKey, previous?: string) =>
  Effect.provide(ApiKeys.make(options), CardCipher.layer(key, previous), { local: true }).pipe(Effect.orDie)

/** Every row of the gateway's tables, as text. */
const rows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const dumps = yield* Effect.forEach(
    [ApiKeys.keysTable, ApiKeys.webhooksTable, ApiKeys.previousSecretsTable],
    (table) => sql.unsafe(`SELECT * FROM ${table}`)
  )
  return JSON.stringify(dumps, (_, value) => typeof value === "bigint" ? value.toString() : value)
})

/** A gateway (5 s cache) that has authenticated a new key, which another process then revoked. */
const cachedThenRevoked = (name: string) =>
  Effect.gen(function*() {
    const admin = yield* keysWith({ cacheTtl: 0 })
    const created = yield* admin.create({ name })
    const gateway = yield* keysWith({ cacheTtl: "5 seconds" })
    yield* gateway.authenticate(created.key)
    expect(yield* admin.revoke(created.apiKey.id)).toBe("revoked")
    return { created, gateway }
  })

/** A well-formed key that nobody made. */
const randomKey = () => `gcx_sk_${Crypto.randomBytes(32).toString("base64url")}`

/**
 * A row for the key `presented`, written behind the service's back: its id. Only a test can plant one (a key
 * is random, and made before it is sent).
 */
const plant = (presented: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = `key_${Crypto.randomBytes(8).toString("hex")}`
    yield* sql`INSERT INTO ${sql(ApiKeys.keysTable)} (id, name, key_hash, rate_per_second, burst, created_at)
      VALUES (${id}, ${"planted"}, ${ApiKeys.hashKey(presented)}, ${1}, ${1}, ${0})`
    return id
  })

const suite = (name: string, database: Layer.Layer<SqlClient.SqlClient>, files?: () => string) =>
  layer(database, { excludeTestServices: true, timeout: 120_000 })(`ApiKeys on ${name}`, (it) => {
    it.effect("create gives a key and webhook secrets of the contract's form; authenticate finds the caller", () =>
      Effect.gen(function*() {
        const keys = yield* keysWith()
        const created = yield* keys.create({
          name: "checkout",
          ratePerSecond: 5,
          burst: 7,
          webhooks: ["https://shop.example/hooks/gcx", "http://127.0.0.1:9999/hook"]
        })
        const key = Redacted.value(created.key)
        expect(key).toMatch(/^gcx_sk_[A-Za-z0-9_-]{43}$/)
        expect(created.apiKey).toMatchObject({ name: "checkout", ratePerSecond: 5, burst: 7 })
        expect(created.apiKey.id).toMatch(/^key_[0-9a-f]{16}$/)
        expect(created.apiKey.webhooks.map((webhook) => webhook.url).sort()).toEqual([
          "http://127.0.0.1:9999/hook",
          "https://shop.example/hooks/gcx"
        ])
        for (const webhook of created.apiKey.webhooks) {
          expect(Redacted.value(webhook.secret)).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
        }
        // String(...) of the service's values never shows a key or a secret
        expect(`${created.key} ${created.apiKey.webhooks.map((webhook) => String(webhook.secret))}`).not.toContain(
          "gcx_sk_"
        )

        const caller = yield* keys.authenticate(Redacted.make(key))
        expect(caller).toEqual(created.apiKey)
        // another process (no cache) finds it in the database, with the secrets opened
        const other = yield* keysWith({ cacheTtl: 0 })
        const found = yield* other.authenticate(Redacted.make(key))
        expect(found.webhooks.map((webhook) => Redacted.value(webhook.secret))).toEqual(
          created.apiKey.webhooks.map((webhook) => Redacted.value(webhook.secret))
        )
        expect(yield* other.find(created.apiKey.id)).toEqual(Option.some(found))
        expect(yield* other.find("key_0000000000000000")).toEqual(Option.none())
      }))

    it.effect("a malformed, unknown or revoked key is UnknownApiKey, naming no key", () =>
      Effect.gen(function*() {
        const keys = yield* keysWith()
        const created = yield* keys.create({ name: "to revoke" })
        expect(created.apiKey).toMatchObject({ ratePerSecond: 20, burst: 40, webhooks: [] })
        const unknown = `gcx_sk_${"A".repeat(43)}`
        for (const presented of ["", "Bearer x", "gcx_sk_short", unknown, `${Redacted.value(created.key)}x`]) {
          const error = yield* Effect.flip(keys.authenticate(Redacted.make(presented)))
          expect(error._tag).toBe("UnknownApiKey")
          expect(error.message).toBe("the API key is missing, unknown or revoked")
        }
        yield* keys.authenticate(created.key)
        expect(yield* keys.revoke(created.apiKey.id)).toBe("revoked")
        // the process that revoked it refuses it at once, though it had it cached
        expect((yield* Effect.flip(keys.authenticate(created.key)))._tag).toBe("UnknownApiKey")
        expect(yield* keys.revoke(created.apiKey.id)).toBe("alreadyRevoked")
        expect(yield* keys.revoke("key_0000000000000000")).toBe("unknown")
        // find still knows it (webhooks of quotes already running are delivered)
        expect(Option.map(yield* keys.find(created.apiKey.id), (key) => key.name)).toEqual(Option.some("to revoke"))
        const listed = (yield* keys.list).find((key) => key.id === created.apiKey.id)
        assert(listed !== undefined)
        expect(Option.isSome(listed.revokedAt)).toBe(true)
      }))

    it.effect("another process refuses a revoked key once its cache entry expires (cacheTtl)", () =>
      Effect.gen(function*() {
        const { created, gateway } = yield* cachedThenRevoked("cached elsewhere")
        yield* TestClock.adjust("4 seconds")
        expect((yield* gateway.authenticate(created.key)).id).toBe(created.apiKey.id)
        yield* TestClock.adjust("1 second")
        expect((yield* Effect.flip(gateway.authenticate(created.key)))._tag).toBe("UnknownApiKey")
      }).pipe(Effect.provide(TestClock.layer())))

    it.effect("a well-formed key not found stays unknown for cacheTtl (no query), then is looked up again", () =>
      Effect.gen(function*() {
        const gateway = yield* keysWith({ cacheTtl: "5 seconds" })
        const presented = randomKey()
        const refused = () =>
          Effect.map(Effect.flip(gateway.authenticate(Redacted.make(presented))), (error) => error._tag)
        expect(yield* refused()).toBe("UnknownApiKey")
        // a row for that very key appears: while the key is remembered as unknown, it is not looked for
        const id = yield* plant(presented)
        yield* TestClock.adjust("4 seconds")
        expect(yield* refused()).toBe("UnknownApiKey")
        yield* TestClock.adjust("1 second")
        expect((yield* gateway.authenticate(Redacted.make(presented))).id).toBe(id)
      }).pipe(Effect.provide(TestClock.layer())))

    it.effect("a lookup that a revoke overtook remembers nothing: the revoking process refuses the key at once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const read = yield* Deferred.make<void>()
        const resume = yield* Deferred.make<void>()
        // the first lookup of a key pauses after its query, before it remembers what it read
        let paused = false
        const pausing = new Proxy(sql, {
          apply: (target, self, args: Array<unknown>) => {
            const statement = Reflect.apply(target, self, args) as Effect.Effect<unknown, unknown>
            const text = Array.isArray(args[0]) ? args[0].join("?") : ""
            if (paused || !text.includes("WHERE key_hash =")) return statement
            paused = true
            return Effect.tap(
              statement,
              () => Effect.andThen(Deferred.succeed(read, undefined), Deferred.await(resume))
            )
          }
        })
        const keys = yield* keysWith({ cacheTtl: "5 seconds" }).pipe(
          Effect.provideService(SqlClient.SqlClient, pausing)
        )
        const created = yield* keys.create({ name: "revoked meanwhile" })
        const lookup = yield* Effect.forkChild(keys.authenticate(created.key))
        yield* Deferred.await(read)
        expect(yield* keys.revoke(created.apiKey.id)).toBe("revoked")
        yield* Deferred.succeed(resume, undefined)
        // read before the revocation, so it answers; but it is not remembered
        expect((yield* Fiber.join(lookup)).id).toBe(created.apiKey.id)
        expect((yield* Effect.flip(keys.authenticate(created.key)))._tag).toBe("UnknownApiKey")
      }).pipe(Effect.provide(TestClock.layer())))

    it.effect("a flood of unknown keys never pushes a caller out: they are remembered apart, at most 1,000", () =>
      Effect.gen(function*() {
        // revoked behind the gateway's back: only its remembered caller can answer for the key now
        const { created, gateway } = yield* cachedThenRevoked("flooded")
        const first = randomKey()
        const flood = [first, ...Array.from({ length: 10_000 }, randomKey)]
        yield* Effect.forEach(flood, (presented) => Effect.flip(gateway.authenticate(Redacted.make(presented))), {
          discard: true
        })
        expect((yield* gateway.authenticate(created.key)).id).toBe(created.apiKey.id)
        // the first unknown key was forgotten past 1,000: it is looked up again, and found once it exists
        const id = yield* plant(first)
        expect((yield* gateway.authenticate(Redacted.make(first))).id).toBe(id)
      }).pipe(Effect.provide(TestClock.layer())))

    it.effect("the database holds the key's SHA-256 only and the webhook secrets sealed: the sentinels are absent", () =>
      Effect.gen(function*() {
        const keys = yield* keysWith()
        const created = yield* keys.create({
          name: "sentinel",
          webhooks: ["https://a.example/h", "https://b.example/h"]
        })
        const key = Redacted.value(created.key)
        const secrets = created.apiKey.webhooks.map((webhook) => Redacted.value(webhook.secret))
        const text = yield* rows
        const hash = Crypto.createHash("sha256").update(key).digest("hex")
        expect(text).toContain(hash)
        // the scan of the files reads what the rows hold
        if (files !== undefined) expect(files()).toContain(hash)
        expect(text).toContain("https://a.example/h")
        for (const sentinel of [key, key.slice(7), ...secrets, ...secrets.map((secret) => secret.slice(6))]) {
          expect(text).not.toContain(sentinel)
          if (files !== undefined) expect(files()).not.toContain(sentinel)
        }
        // the listing shows neither
        const listed = JSON.stringify(yield* keys.list)
        for (const sentinel of [key, ...secrets]) expect(listed).not.toContain(sentinel)
        expect(listed).toContain("https://b.example/h")
      }))

    it.effect("a bad setting is InvalidKeySettings naming the field, and writes nothing", () =>
      Effect.gen(function*() {
        const keys = yield* keysWith()
        const before = (yield* keys.list).length
        const refused = [
          yield* Effect.flip(keys.create({ name: "x", webhooks: ["ftp://files.example/h"] })),
          yield* Effect.flip(keys.create({ name: "x", webhooks: ["not a url"] })),
          yield* Effect.flip(keys.create({ name: "x", webhooks: ["https://user:pw@a.example/h"] })),
          yield* Effect.flip(keys.create({ name: "x", webhooks: ["http://shop.example/hooks"] })),
          yield* Effect.flip(keys.create({ name: " " })),
          yield* Effect.flip(keys.create({ name: "x", ratePerSecond: 0 })),
          yield* Effect.flip(keys.create({ name: "x", burst: 1.5 }))
        ]
        expect(refused.map((error) => error._tag === "InvalidKeySettings" ? error.field : error._tag)).toEqual([
          "webhook",
          "webhook",
          "webhook",
          "webhook",
          "name",
          "rate",
          "burst"
        ])
        expect(refused[0]!.message).toBe("webhook must be an http or https URL, got a 'ftp:' URL")
        expect(refused[2]!.message).not.toContain("pw")
        expect((yield* keys.list).length).toBe(before)
        const created = yield* keys.create({ name: "x" })
        expect((yield* Effect.flip(keys.addWebhook(created.apiKey.id, "javascript:alert(1)")))._tag).toBe(
          "InvalidKeySettings"
        )
        expect(yield* keys.addWebhook("key_0000000000000000", "https://a.example/h")).toEqual(Option.none())
        const added = yield* keys.addWebhook(created.apiKey.id, "https://c.example/h")
        assert(Option.isSome(added))
        const caller = yield* (yield* keysWith({ cacheTtl: 0 })).authenticate(created.key)
        expect(caller.webhooks.map((webhook) => [webhook.id, webhook.url, Redacted.value(webhook.secret)])).toEqual([
          [added.value.id, "https://c.example/h", Redacted.value(added.value.secret)]
        ])
      }))

    it.effect("rotateWebhookSecret: a new secret, once; the replaced one signs beside it for the overlap, sealed at rest", () =>
      Effect.gen(function*() {
        const keys = yield* keysWith({ cacheTtl: 0 })
        const created = yield* keys.create({ name: "rotate", webhooks: ["https://a.example/h"] })
        const original = created.apiKey.webhooks[0]!
        const endpointNow = Effect.map(
          keys.find(created.apiKey.id),
          (found) => Option.getOrThrow(found).webhooks[0]!
        )
        const secretsOf = (endpoint: ApiKeys.WebhookEndpoint) => [
          Redacted.value(endpoint.secret),
          endpoint.previous === undefined ? undefined : Redacted.value(endpoint.previous.secret)
        ]
        const before = Date.now()
        const rotated = yield* keys.rotateWebhookSecret(original.id)
        assert(Option.isSome(rotated))
        const { endedEarlierOverlap, endpoint, keyId, previousUntil } = rotated.value
        expect([keyId, endpoint.id, endpoint.url]).toEqual([created.apiKey.id, original.id, original.url])
        expect(endedEarlierOverlap).toBe(false)
        const fresh = Redacted.value(endpoint.secret)
        expect(fresh).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
        expect(fresh).not.toBe(Redacted.value(original.secret))
        // the replaced secret signs for 24 h by default
        assert(Option.isSome(previousUntil))
        const overlap = DateTime.toEpochMillis(previousUntil.value) - before
        expect(overlap).toBeGreaterThanOrEqual(24 * 3_600_000)
        expect(overlap).toBeLessThan(24 * 3_600_000 + 60_000)
        expect(secretsOf(yield* endpointNow)).toEqual([fresh, Redacted.value(original.secret)])
        expect((yield* endpointNow).previous?.expiresAt).toBe(DateTime.toEpochMillis(previousUntil.value))
        // the list tells until when, never the secrets
        const listed = (yield* keys.list).find((key) => key.id === created.apiKey.id)!
        expect(listed.webhooks.map((webhook) => webhook.previousUntil)).toEqual([previousUntil])
        // both sealed at rest
        const text = yield* rows
        for (const secret of [fresh, Redacted.value(original.secret)]) expect(text).not.toContain(secret.slice(6))
        // a data key rotation seals the replaced secret again too: it still signs under the new key alone; an
        // administration command's start (resealWebhooks: false) opens them under either key and changes nothing
        const next = CardCipher.generateKey()
        const textBefore = yield* rows
        const admin = yield* keysWith({ cacheTtl: 0, resealWebhooks: false }, next, dataKey)
        expect(secretsOf(Option.getOrThrow(yield* admin.find(created.apiKey.id)).webhooks[0]!)).toEqual([
          fresh,
          Redacted.value(original.secret)
        ])
        // nor does it seal new secrets under a key the deployment has not moved to (its keys the wrong way round)
        const refusals = [
          yield* Effect.flip(admin.create({ name: "stale", webhooks: ["https://b.example/h"] })),
          yield* Effect.flip(admin.addWebhook(created.apiKey.id, "https://b.example/h")),
          yield* Effect.flip(admin.rotateWebhookSecret(original.id))
        ]
        for (const refused of refusals) {
          assert(refused._tag === "StaleDataKey")
          expect(refused.message).toMatch(/^\d+ webhook secrets are sealed under GCX_DATA_KEY_PREVIOUS/)
        }
        expect(yield* rows).toEqual(textBefore)
        yield* keysWith({ cacheTtl: 0 }, next, dataKey)
        expect(yield* rows).not.toEqual(textBefore)
        const underNext = yield* keysWith({ cacheTtl: 0 }, next)
        const seen = Option.getOrThrow(yield* underNext.find(created.apiKey.id)).webhooks[0]!
        expect(secretsOf(seen)).toEqual([fresh, Redacted.value(original.secret)])
        yield* keysWith({ cacheTtl: 0 }, dataKey, next)
        // a rotation with no overlap ends the replaced secrets at once (a leaked one)
        const leaked = Option.getOrThrow(yield* keys.rotateWebhookSecret(original.id, { overlap: 0 }))
        expect(leaked.previousUntil).toEqual(Option.none())
        // it said so: the first rotation's replaced secret still signed
        expect(leaked.endedEarlierOverlap).toBe(true)
        expect(secretsOf(yield* endpointNow)).toEqual([Redacted.value(leaked.endpoint.secret), undefined])
        // a short overlap: the replaced secret is left out once it ends
        const short = Option.getOrThrow(yield* keys.rotateWebhookSecret(original.id, { overlap: "1 second" }))
        expect(short.endedEarlierOverlap).toBe(false)
        expect(secretsOf(yield* endpointNow)).toEqual([
          Redacted.value(short.endpoint.secret),
          Redacted.value(leaked.endpoint.secret)
        ])
        yield* Effect.sleep("1100 millis")
        expect(secretsOf(yield* endpointNow)).toEqual([Redacted.value(short.endpoint.secret), undefined])
        // an unknown endpoint is none; an overlap outside 0 to 7 days is refused, and changes nothing
        expect(yield* keys.rotateWebhookSecret("wh_0000000000000000")).toEqual(Option.none())
        for (const bad of [-1, "8 days", Number.NaN] as const) {
          const refused = yield* Effect.flip(keys.rotateWebhookSecret(original.id, { overlap: bad }))
          assert(refused._tag === "InvalidKeySettings")
          expect(refused.message).toBe("overlap must be from 0 to 7 days")
        }
        expect(secretsOf(yield* endpointNow)[0]).toBe(Redacted.value(short.endpoint.secret))
      }))

    it.effect("rotateWebhookSecret at once from two nodes: each new secret is either the current or the previous one", () =>
      Effect.gen(function*() {
        const keys = yield* keysWith({ cacheTtl: 0 })
        const other = yield* keysWith({ cacheTtl: 0 })
        const created = yield* keys.create({ name: "race", webhooks: ["https://a.example/h"] })
        const id = created.apiKey.webhooks[0]!.id
        const [a, b] = yield* Effect.all(
          [keys.rotateWebhookSecret(id), other.rotateWebhookSecret(id)],
          { concurrency: 2 }
        )
        const handed = [a, b].map((rotated) => Redacted.value(Option.getOrThrow(rotated).endpoint.secret))
        const now = Option.getOrThrow(yield* keys.find(created.apiKey.id)).webhooks[0]!
        const signing = [Redacted.value(now.secret), now.previous && Redacted.value(now.previous.secret)]
        expect([...signing].sort()).toEqual([...handed].sort())
      }))

    it.effect("a start after a data key rotation seals the secrets again under the new key; a key that is neither is refused", () =>
      Effect.gen(function*() {
        const created = yield* (yield* keysWith()).create({ name: "rotation", webhooks: ["https://a.example/h"] })
        const secrets = created.apiKey.webhooks.map((webhook) => Redacted.value(webhook.secret))
        const sealed = Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{ readonly secret_sealed: string }>`SELECT secret_sealed FROM ${sql(ApiKeys.webhooksTable)}
            WHERE key_id = ${created.apiKey.id}`
        )
        const before = yield* sealed
        // a data key that is neither of the table's: refused at the start, naming the key that sealed them
        const mistaken = yield* Effect.flip(
          Effect.provide(ApiKeys.make(), CardCipher.layer(CardCipher.generateKey()), { local: true })
        )
        assert(mistaken._tag === "UnsealError")
        expect(mistaken.keyId).toBe(Result.getOrThrow(CardCipher.parseKey(dataKey)).id)
        expect(mistaken.message).toContain("neither GCX_DATA_KEY nor GCX_DATA_KEY_PREVIOUS")
        expect(yield* sealed).toEqual(before)
        // the rotation: one start with both keys seals the secrets again under the new one
        const next = CardCipher.generateKey()
        const rotated = yield* keysWith({ cacheTtl: 0 }, next, dataKey)
        const caller = yield* rotated.authenticate(created.key)
        expect(caller.webhooks.map((webhook) => Redacted.value(webhook.secret))).toEqual(secrets)
        expect(yield* sealed).not.toEqual(before)
        // then the previous key is no longer needed for them: no endpoint is left out
        const after = yield* keysWith({ cacheTtl: 0 }, next)
        expect((yield* after.authenticate(created.key)).webhooks.map((webhook) => Redacted.value(webhook.secret)))
          .toEqual(secrets)
        // rotated back, for the suite's other tests
        yield* keysWith({ cacheTtl: 0 }, dataKey, next)
      }))
  })

/** The bytes of every file of the SQLite database (the database, its WAL), as latin1 text. */
const sqliteFiles = () =>
  Fs.readdirSync(folder).map((file) => Fs.readFileSync(Path.join(folder, file)).toString("latin1")).join("\n")

describe("ApiKeys", () => {
  suite("SQLite", sqlite, sqliteFiles)
  suite("PostgreSQL", postgres)

  it("validateWebhookUrl: https anywhere, http on loopback only (127.0.0.1, localhost, [::1]), never echoing credentials", () => {
    for (
      const url of ["https://shop.example/hooks", "http://127.0.0.1:8999/h", "http://localhost/h", "http://[::1]:80/h"]
    ) {
      expect(Result.isSuccess(KeySettings.validateWebhookUrl(url)), url).toBe(true)
    }
    for (
      const url of ["http://shop.example/hooks", "http://10.0.0.1/h", "http://127.0.0.1.example/h", "http://[::2]/h"]
    ) {
      const checked = KeySettings.validateWebhookUrl(url)
      assert(Result.isFailure(checked), url)
      expect(checked.failure).toBeInstanceOf(KeySettings.InvalidKeySettings)
      expect(checked.failure.field).toBe("webhook")
      expect(checked.failure.message).toMatch(
        /^webhook must be https \(http only on loopback: 127\.0\.0\.1, localhost, \[::1\]\), got 'http:\/\/[^/]+'$/
      )
    }
    // a refused URL's credentials are never quoted, whatever the scheme, parsed or not
    for (const url of ["ftp://user:s3cret@files.example/", "https://user:s3cret@exa mple.com/", "user:s3cret@host"]) {
      const checked = KeySettings.validateWebhookUrl(url)
      assert(Result.isFailure(checked), url)
      expect(checked.failure.message, url).not.toContain("s3cret")
    }
    expect(KeySettings.validateWebhookUrl("http://shop.example/hooks")).toEqual(
      Result.fail(
        new KeySettings.InvalidKeySettings({
          field: "webhook",
          reason: "must be https (http only on loopback: 127.0.0.1, localhost, [::1]), got 'http://shop.example'"
        })
      )
    )
  })

  it.effect("layerFile: the keys' own file, opened by two at once (not exclusive), private (0700 folder, 0600 files)", () =>
    Effect.gen(function*() {
      const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-gateway-keys-file-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
      const filename = Path.join(directory, "own", ApiKeys.defaultFilename)
      const cipher = CardCipher.layer(dataKey)
      const open = Layer.build(ApiKeys.layerFile(filename, { cacheTtl: 0 }).pipe(Layer.provide(cipher))).pipe(
        Effect.map((context) => Context.get(context, ApiKeys.ApiKeys))
      )
      // a gateway holds it open, as `gcx serve` does, while another opens it, as `gcx serve keys` does
      const gateway = yield* open
      const manager = yield* open
      const created = yield* manager.create({ name: "shared" })
      expect((yield* gateway.authenticate(created.key)).id).toBe(created.apiKey.id)
      expect(yield* manager.revoke(created.apiKey.id)).toBe("revoked")
      expect((yield* Effect.flip(gateway.authenticate(created.key)))._tag).toBe("UnknownApiKey")
      expect(Fs.statSync(Path.dirname(filename)).mode & 0o777).toBe(0o700)
      for (const file of [filename, `${filename}-wal`, `${filename}-shm`]) {
        expect(Fs.statSync(file).mode & 0o777, file).toBe(0o600)
      }
    }).pipe(Effect.scoped))

  it.effect("fileConfig: GCX_GATEWAY_KEYS_FILE, else gateway-keys.db in the folder of the quotes' file", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>, databaseFile: string) =>
        ApiKeys.fileConfig(databaseFile).pipe(
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
        )
      expect(yield* read({}, ".gcx/gcx.db")).toBe(Path.join(".gcx", "gateway-keys.db"))
      expect(yield* read({}, "/var/lib/gcx/quotes.db")).toBe("/var/lib/gcx/gateway-keys.db")
      expect(yield* read({ GCX_GATEWAY_KEYS_FILE: "/srv/keys.db" }, ".gcx/gcx.db")).toBe("/srv/keys.db")
    }))
})
