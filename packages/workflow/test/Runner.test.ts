import { assert, describe, expect, it, layer } from "@effect/vitest"
import { ConfigProblem } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { ConfigProvider, Context, Effect, Exit, Fiber, Layer, Logger, Redacted, Result, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import * as Database from "../src/Database.js"
import { CardCipher, ClusterSecurity, DurableQuotes, QuoteWorkflow } from "../src/index.js"
import * as Outcomes from "../src/Outcomes.js"
import * as Runner from "../src/Runner.js"
import { card, dataKey, sandbox } from "./fixtures.js"
import { runnerNode } from "./fixtures/runner.js"
import * as Certificates from "./utils/certificates.js"
import * as TestPg from "./utils/postgres.js"

/** A client-only node in this process: the API and the outcomes of every runner. */
const clientNode = (db: TestPg.TestDatabase) =>
  Layer.build(
    DurableQuotes.layer().pipe(
      Layer.provideMerge(Runner.layerClient({ databaseUrl: db.url, security: ClusterSecurity.insecureLoopback })),
      Layer.provide(CardCipher.layer(dataKey))
    )
  )

/** A runner and a client-only node on the database and the sandbox of the context. */
const twoNodes = Effect.gen(function*() {
  const db = yield* TestPg.PgTestDatabase
  const server = yield* Sandbox.SandboxServer
  yield* runnerNode(db, server)
  const client = yield* clientNode(db)
  return { db, server, client, api: Context.get(client, DurableQuotes.DurableQuotes) }
})

/** How building a client-only node on `url` (insecure loopback) fails. */
const clientFailure = (url: string) =>
  Effect.flip(
    Layer.build(
      Runner.layerClient({ databaseUrl: Redacted.make(url), security: ClusterSecurity.insecureLoopback })
    ).pipe(Effect.scoped)
  )

describe("Runner: bad input", () => {
  it.effect("an unreachable GCX_DATABASE_URL fails with DatabaseUnreachable, naming the server, never the password", () =>
    Effect.gen(function*() {
      const port = yield* TestPg.freePort
      const failure = yield* clientFailure(`postgres://gcx:hunter2-SENTINEL@127.0.0.1:${port}/gcx`)
      expect(failure._tag).toBe("DatabaseUnreachable")
      expect(failure.message).toContain(`cannot reach PostgreSQL at 127.0.0.1:${port}/gcx (GCX_DATABASE_URL)`)
      expect(failure.message).toContain("ECONNREFUSED")
      expect(JSON.stringify({ failure, message: failure.message, text: String(failure) })).not.toContain("hunter2")
    }))

  it.effect("a GCX_DATABASE_URL that is not a PostgreSQL URL fails before any I/O", () =>
    Effect.gen(function*() {
      const failure = yield* clientFailure("mysql://db/gcx")
      assert(failure._tag === "DatabaseUnreachable")
      expect(Database.isMalformedUrl(failure)).toBe(true)
      expect(failure.message).toContain("GCX_DATABASE_URL is not a PostgreSQL URL")
      // a password whose percent-encoding is broken: malformed too, and never shown
      const encoding = yield* clientFailure("postgres://gcx:pass%zzword@127.0.0.1:1/gcx")
      assert(encoding._tag === "DatabaseUnreachable")
      expect(Database.isMalformedUrl(encoding)).toBe(true)
      expect(encoding.message).not.toContain("pass%zzword")
    }))

  it.effect("GCX_RUNNER_ADDRESS must be host:port; GCX_DATABASE_URL must be set", () =>
    Effect.gen(function*() {
      const build = (env: Record<string, string>) =>
        Layer.build(Runner.layerConfig()).pipe(
          Effect.scoped,
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })),
          Effect.flip
        )
      const badAddress = yield* build({ GCX_DATABASE_URL: "postgres://127.0.0.1:1/x", GCX_RUNNER_ADDRESS: "runner-1" })
      expect(String(badAddress)).toContain("GCX_RUNNER_ADDRESS")
      expect(String(badAddress)).toContain("GCX_RUNNER_ADDRESS must be host:port")
      const noUrl = yield* build({ GCX_RUNNER_ADDRESS: "127.0.0.1:4000", GCX_RUNNER_INSECURE_LOOPBACK: "true" })
      expect(String(noUrl)).toContain("GCX_DATABASE_URL")
      assert(noUrl._tag === "ConfigError")
      expect(ConfigProblem.fromError(noUrl).map((problem) => problem.message)).toContain("GCX_DATABASE_URL is not set")
      // no certificates and no insecure loopback: refused, naming the variables that are missing
      const noTls = yield* build({
        GCX_DATABASE_URL: "postgres://127.0.0.1:1/x",
        GCX_RUNNER_ADDRESS: "127.0.0.1:4000",
        GCX_RUNNER_TLS_CA: "/nonexistent/ca.pem"
      })
      expect(String(noTls)).toContain("GCX_RUNNER_TLS_CERT")
      expect(String(noTls)).toContain("GCX_RUNNER_TLS_KEY")
      expect(String(noTls)).not.toContain("GCX_RUNNER_TLS_CA ")
      const unreadable = yield* build({
        GCX_DATABASE_URL: "postgres://127.0.0.1:1/x",
        GCX_RUNNER_ADDRESS: "127.0.0.1:4000",
        GCX_RUNNER_TLS_CA: "/nonexistent/ca.pem",
        GCX_RUNNER_TLS_CERT: "/nonexistent/node.pem",
        GCX_RUNNER_TLS_KEY: "-----BEGIN PRIVATE KEY-----KEY-SENTINEL"
      })
      expect(String(unreadable)).toContain("GCX_RUNNER_TLS_CA")
      expect(String(unreadable)).not.toContain("KEY-SENTINEL")
      expect(Result.getOrThrow(Runner.parseRunnerAddress("[::1]:34431"))).toMatchObject({ host: "::1", port: 34431 })
    }))

  it.effect("certificates TLS would refuse are refused at the start, naming the variable, never the key", () =>
    Effect.gen(function*() {
      const security = (env: Record<string, string>) =>
        ClusterSecurity.securityConfig().pipe(
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
        )
      const ours = Certificates.make("checked")
      const theirs = Certificates.make("other")
      expect((yield* security(ours.env))._tag).toBe("Tls")
      // the CA as a bundle, the old and the new one (a rotation): accepted
      expect((yield* security({ ...ours.env, GCX_RUNNER_TLS_CA: theirs.ca + ours.ca }))._tag).toBe("Tls")
      // a certificate signed by an intermediate CA, given with it, under the root: accepted; without it, refused
      const chained = Certificates.makeChained("chained")
      expect((yield* security(chained.env))._tag).toBe("Tls")
      const leaf = chained.cert.slice(0, chained.cert.indexOf("-----END CERTIFICATE-----") + 25)
      expect(String(yield* Effect.flip(security({ ...chained.env, GCX_RUNNER_TLS_CERT: leaf }))))
        .toContain("GCX_RUNNER_TLS_CERT's certificate is not signed by GCX_RUNNER_TLS_CA")
      const refusals: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{ GCX_RUNNER_TLS_KEY: theirs.key }, "GCX_RUNNER_TLS_KEY is not the key of GCX_RUNNER_TLS_CERT's certificate"],
        [{ GCX_RUNNER_TLS_CA: theirs.ca }, "GCX_RUNNER_TLS_CERT's certificate is not signed by GCX_RUNNER_TLS_CA"],
        [
          { GCX_RUNNER_TLS_CERT: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----" },
          "GCX_RUNNER_TLS_CERT is not a PEM certificate"
        ],
        [
          { GCX_RUNNER_TLS_KEY: "-----BEGIN PRIVATE KEY-----\nKEY-SENTINEL\n-----END PRIVATE KEY-----" },
          "GCX_RUNNER_TLS_KEY is not a PEM private key"
        ]
      ]
      for (const [change, message] of refusals) {
        const refused = String(yield* Effect.flip(security({ ...ours.env, ...change })))
        expect(refused).toContain(message)
        expect(refused).not.toContain("KEY-SENTINEL")
        expect(refused).not.toContain(theirs.key.split("\n")[1]!)
      }
      expect(Result.isFailure(Runner.parseRunnerAddress("127.0.0.1:70000"))).toBe(true)
    }))
})

/** Whether this session takes the schema lock (`pg_try_advisory_lock`): false while another holds it. */
const tryLock = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    Effect.map(
      sql<{ readonly locked: boolean }>`SELECT pg_try_advisory_lock(${Database.schemaLockKey}) AS locked`,
      (rows) => rows[0]!.locked
    )
)

describe("Runner: nodes started at once on a new database", () => {
  layer(Layer.provideMerge(TestPg.layerClient, TestPg.layer()), { excludeTestServices: true, timeout: 60_000 })(
    "new database",
    (it) => {
      it.effect("the cluster's tables are created under an advisory lock, held only while a node builds its storage", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          // while a node's storage is built, another session cannot take the lock
          const heldInside = yield* Effect.gen(function*() {
            let locked: boolean | undefined
            yield* Layer.build(
              Database.withSchemaLock(Layer.effectDiscard(Effect.map(tryLock, (taken) => {
                locked = taken
              }))).pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql)))
            )
            return locked
          })
          expect(heldInside).toBe(false)
        }).pipe(Effect.scoped))

      it.effect("three nodes started at once on it all start, and the lock is free afterwards", () =>
        Effect.gen(function*() {
          const db = yield* TestPg.PgTestDatabase
          const sql = yield* SqlClient.SqlClient
          yield* Effect.forEach(
            [1, 2, 3],
            () => Layer.build(Runner.layerClient({ databaseUrl: db.url, security: ClusterSecurity.insecureLoopback })),
            { concurrency: "unbounded", discard: true }
          )
          expect(yield* tryLock).toBe(true)
          yield* sql`SELECT pg_advisory_unlock(${Database.schemaLockKey})`
        }).pipe(Effect.scoped))
    }
  )
})

describe("Runner: one runner and a client-only node on PostgreSQL", () => {
  layer(Layer.merge(TestPg.layer(), sandbox({ timeScale: 0.05 })), { excludeTestServices: true, timeout: 60_000 })(
    "shared database",
    (it) => {
      it.effect("the client submits and awaits; every terminal outcome reaches its Outcomes subscriber", () =>
        Effect.gen(function*() {
          const { api, client } = yield* twoNodes
          const seen = yield* Context.get(client, Outcomes.Outcomes).subscribe.pipe(
            Stream.take(3),
            Stream.runCollect,
            Effect.forkChild
          )
          // LISTEN is issued when the stream starts, with no signal back: give it a moment
          yield* Effect.sleep("1 second")
          const requests = [
            { requestId: "runner-test-success", card: card(TestData.Cards.success) },
            { requestId: "runner-test-instant", card: card(TestData.Cards.instant) },
            { requestId: "runner-test-invalid", card: card(TestData.Cards.invalid) }
          ]
          const exits = yield* Effect.forEach(
            requests,
            ({ card, requestId }) =>
              api.submit(card, { requestId }).pipe(Effect.andThen(Effect.exit(api.result(requestId)))),
            { concurrency: "unbounded" }
          )
          expect(exits.map((exit) => exit._tag)).toEqual(["Success", "Success", "Failure"])
          // A requestId no node submitted: the client-only node finds no quote in PostgreSQL, and says so at once.
          const unknown = yield* Effect.flip(api.result("runner-test-never-submitted"))
          expect(unknown).toMatchObject({ _tag: "QuoteNotFound", requestId: "runner-test-never-submitted" })
          const outcomes = [...(yield* Fiber.join(seen).pipe(Effect.timeout("20 seconds")))]
          const byRequest = new Map(outcomes.map((outcome) => [outcome.requestId, outcome]))
          expect(byRequest.size).toBe(3)
          for (const [index, { requestId }] of requests.entries()) {
            const outcome = byRequest.get(requestId)!
            const exit = exits[index]!
            if (Exit.isSuccess(exit)) {
              expect(outcome).toMatchObject({ _tag: "Completed", transactionId: exit.value.transactionId })
            } else {
              expect(outcome).toMatchObject({ _tag: "Failed", errorTag: "InvalidCard" })
              expect(outcome.transactionId).toMatch(/.+/)
            }
          }
          expect(JSON.stringify(outcomes)).not.toContain(TestData.pin)
        }).pipe(Effect.scoped))
    }
  )

  layer(Layer.merge(TestPg.layer(), sandbox({ timeScale: 0.05 })), { excludeTestServices: true, timeout: 60_000 })(
    "a requestId belongs to one card, across nodes",
    (it) => {
      it.effect("another node's card under a recorded requestId is RequestIdConflict; the same card is the same quote; a poisoned requestId stays free", () =>
        Effect.gen(function*() {
          const { api, db, server } = yield* twoNodes
          const other = Context.get(yield* clientNode(db), DurableQuotes.DurableQuotes)
          // the same card submitted at once from two nodes: one quote, one transaction
          const [first, second] = yield* Effect.all([
            api.execute(card(TestData.Cards.success), { requestId: "pg-reqid-1" }),
            other.execute(card(TestData.Cards.success), { requestId: "pg-reqid-1" })
          ], { concurrency: 2 })
          expect(second.transactionId).toBe(first.transactionId)
          const conflict = yield* Effect.flip(other.submit(card(TestData.Cards.instant), { requestId: "pg-reqid-1" }))
          expect(conflict._tag).toBe("RequestIdConflict")
          expect((yield* other.result("pg-reqid-1")).transactionId).toBe(first.transactionId)
          // a run with a fake sealed card sent through the cluster under a requestId not used yet
          const fake = new CardCipher.SealedCard({
            masked: "****0001",
            productLineId: TestData.defaultProductLineId,
            sealed: Buffer.concat([Buffer.of(2), randomBytes(40)]).toString("base64")
          })
          const payload = { requestId: "pg-reqid-2", card: fake }
          const derived = yield* QuoteWorkflow.QuoteWorkflow.executionId(payload)
          const poisoned = yield* Effect.exit(
            QuoteWorkflow.execute(payload, derived).pipe(Effect.provide(yield* clientNode(db)))
          )
          expect(Exit.isFailure(poisoned)).toBe(true)
          expect((yield* Effect.flip(api.result("pg-reqid-2")))._tag).toBe("QuoteNotFound")
          const genuine = yield* api.execute(card(TestData.Cards.instant), { requestId: "pg-reqid-2" })
          expect((yield* other.result("pg-reqid-2")).transactionId).toBe(genuine.transactionId)
          const journal = yield* server.journal
          expect(journal.transactionsByRequestId["pg-reqid-1"]).toEqual([first.transactionId])
          expect(journal.transactionsByRequestId["pg-reqid-2"]).toEqual([genuine.transactionId])
        }).pipe(Effect.scoped))
    }
  )

  layer(Layer.merge(TestPg.layer({ ownServer: true }), sandbox({ timeScale: 1 })), {
    excludeTestServices: true,
    timeout: 60_000
  })("database outage", (it) => {
    it.effect(
      "a runner that loses its database mid-quote keeps none half-done: all complete once it is back",
      () =>
        Effect.gen(function*() {
          const { api, db, server } = yield* twoNodes
          const requestIds = Array.from({ length: 8 }, (_, i) => `outage-${i}`)
          yield* Effect.forEach(
            requestIds,
            (requestId, i) => api.submit(card(`49290000000${String(10_000 + i)}`), { requestId }),
            { concurrency: "unbounded" }
          )
          // the quotes take 2 s: stop the database while they are in flight, start it 3 s later
          yield* Effect.sleep("500 millis")
          yield* db.stop
          yield* Effect.sleep("3 seconds")
          yield* db.start
          const results = yield* Effect.forEach(requestIds, (requestId) => api.result(requestId), {
            concurrency: "unbounded"
          }).pipe(Effect.timeout("45 seconds"))
          expect(results).toHaveLength(requestIds.length)
          const transactions = yield* server.transactions
          for (const requestId of requestIds) {
            const mine = transactions.filter((t) => t.requestId === requestId)
            expect(mine.map((t) => t.state)).toEqual(["completed"])
          }
          const journal = yield* server.journal
          for (const requestId of requestIds) expect(journal.transactionsByRequestId[requestId]).toHaveLength(1)
        }).pipe(
          Effect.scoped,
          // While the database is down the cluster logs its expected warnings (storage reads, shard
          // locks), each with a stack trace: no logger here, so `pnpm test` does not show them as failures.
          Effect.provide(Logger.layer([]))
        ),
      90_000
    )

    it.effect(
      "a client-only node awaiting or submitting through the outage gets each outcome once it is back, not a defect",
      () =>
        Effect.gen(function*() {
          const { api, db, server } = yield* twoNodes
          const requestIds = Array.from({ length: 4 }, (_, i) => `awaited-${i}`)
          yield* Effect.forEach(
            requestIds,
            (requestId, i) => api.submit(card(`49290000000${String(20_000 + i)}`), { requestId }),
            { concurrency: "unbounded" }
          )
          // awaited from before the outage: the reads fail while the database is down, and go on
          const awaiting = yield* Effect.forkChild(
            Effect.forEach(requestIds, (requestId) => Effect.exit(api.result(requestId)), { concurrency: "unbounded" })
          )
          yield* Effect.sleep("300 millis")
          yield* db.stop
          // submitted while the database is down: recorded once it is back, under its one requestId
          const late = yield* Effect.forkChild(
            api.submit(card("4929000000030000"), { requestId: "awaited-late" }).pipe(
              Effect.andThen(api.result("awaited-late"))
            )
          )
          yield* Effect.sleep("3 seconds")
          yield* db.start
          const exits = yield* Fiber.join(awaiting).pipe(Effect.timeout("45 seconds"))
          expect(exits.map((exit) => exit._tag)).toEqual(requestIds.map(() => "Success"))
          yield* Fiber.join(late).pipe(Effect.timeout("45 seconds"))
          const journal = yield* server.journal
          for (const requestId of [...requestIds, "awaited-late"]) {
            expect(journal.transactionsByRequestId[requestId]).toHaveLength(1)
          }
        }).pipe(Effect.scoped, Effect.provide(Logger.layer([]))),
      90_000
    )
  })
})
