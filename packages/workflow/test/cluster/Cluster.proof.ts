/**
 * The multi-runner proof (`pnpm test:cluster`): three runner processes on one throwaway PostgreSQL,
 * the sandbox in its own process (quotes of about 3 s, 5 % 503 answers), this process as the
 * client-only node, all with the cluster's TLS certificates (authentication on). It submits 1,000
 * quotes (200 under CI), 40 % of them at once; once 30 % of them are in flight (300; 60 under CI) it
 * SIGKILLs the runner that holds the most (at least a quarter of those in flight), then restarts the
 * other two one after the other. Every quote must end with exactly one
 * outcome, readable with `result` on the client; the sandbox must hold exactly one transaction per
 * requestId. Failover is measured from the kill to the next GET of each quote the killed runner
 * held. Afterwards every table of the database is dumped and scanned for the planted sentinels.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, layer } from "@effect/vitest"
import { Api, Journal, Lifecycle } from "@gcx/sandbox"
import { Cause, Context, DateTime, Deferred, Effect, Exit, Fiber, Layer, Schedule, Schema, Stream } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { CardCipher, ClusterSecurity, DurableQuotes, Outcomes } from "../../src/index.js"
import * as Runner from "../../src/Runner.js"
import { jwtShape } from "../fixtures.js"
import * as Certificates from "../utils/certificates.js"
import * as TestPg from "../utils/postgres.js"
import * as Processes from "./processes.js"

const quotes = Number(process.env.GCX_CLUSTER_QUOTES ?? (process.env.CI === "true" ? 200 : 1_000))
/** Quotes submitted at once: 40 % of the run. */
const inFlight = Math.round(quotes * 0.4)
/** The kill comes once this many quotes are in flight (submitted, no outcome yet): 300 of 1,000. */
const killInFlight = Math.round(quotes * 0.3)

/** The planted partner: its secret and API key are sentinels the at-rest scan looks for. */
const partner = {
  clientId: "cluster-partner",
  clientSecret: "SECRET-SENTINEL-cluster-5b1e",
  apiKey: "APIKEY-SENTINEL-cluster-93c0",
  creatorId: 7101
}

const admin = async (endpoint: Processes.Endpoint, path: string): Promise<unknown> => {
  const response = await fetch(`${endpoint.baseUrl}${Api.adminPrefix}${path}`, {
    headers: { [Api.adminKeyHeader]: endpoint.adminKey }
  })
  if (!response.ok) throw new Error(`admin GET ${path} answered ${response.status}`)
  return response.json()
}
const journalOf = (endpoint: Processes.Endpoint) =>
  Effect.promise(() => admin(endpoint, "/journal")).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(Journal.Journal)),
    Effect.orDie
  )
const transactionsOf = (endpoint: Processes.Endpoint) =>
  Effect.promise(() => admin(endpoint, "/transactions")).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Lifecycle.Summary))),
    Effect.orDie
  )

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

/** Every row of every table of the public schema, as JSON text. */
const dumpDatabase = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`
  const dumps = yield* Effect.forEach(tables, ({ name }) =>
    sql.unsafe(`SELECT * FROM "${name}"`).pipe(
      Effect.map((rows) =>
        JSON.stringify(
          rows,
          // the PostgreSQL driver reads BIGINT columns (snowflake ids) as bigints
          (_, value) =>
            value instanceof Uint8Array
              ? Buffer.from(value).toString("latin1")
              : typeof value === "bigint"
              ? value.toString()
              : value
        )
      )
    ))
  return { tables: tables.map((t) => t.name), text: dumps.join("\n") }
})

/** The PIN of every quote: a sentinel the at-rest scan looks for. */
const pinSentinel = "pin-SENTINEL-7731"

/** A distinct card number per quote (derived balances). */
const cardNumber = (index: number) => `4929${String(100_000_000_000 + index * 7919).slice(-12)}`

const dataKey = CardCipher.generateKey()

/** The cluster's CA and the certificate every node of the proof presents (authentication on). */
const certificates = Certificates.make("cluster-proof")
/** `GCX_CLUSTER_TRANSPORT=insecure-loopback`: the same run without authentication, for comparison. */
const insecure = process.env.GCX_CLUSTER_TRANSPORT === "insecure-loopback"

/** This process as a client-only node: the API and the outcomes announced by every runner. */
const clientNode = (db: TestPg.TestDatabase) =>
  DurableQuotes.layer().pipe(
    Layer.provideMerge(Runner.layerClient({
      databaseUrl: db.url,
      security: insecure ? ClusterSecurity.insecureLoopback : certificates.security
    })),
    Layer.provide(CardCipher.layer(dataKey))
  )

describe("cluster", () => {
  layer(TestPg.layer(), { excludeTestServices: true, timeout: 120_000 })("three runners on PostgreSQL", (it) => {
    it.effect(
      `${quotes} quotes survive a SIGKILLed runner and a rolling restart: one outcome and one transaction each`,
      () =>
        Effect.gen(function*() {
          const db = yield* TestPg.PgTestDatabase
          const endpoint = yield* Processes.sandbox({
            timeScale: 1.5,
            faults: [{ route: "any", kind: "status503", probability: 0.05 }],
            partners: [partner]
          })
          const env = {
            GCX_DATABASE_URL: db.urlString,
            GCX_SANDBOX: JSON.stringify(endpoint),
            GCX_PARTNER: JSON.stringify(partner),
            GCX_DATA_KEY: dataKey,
            ...(insecure ? { GCX_RUNNER_INSECURE_LOOPBACK: "true" } : certificates.env)
          }
          const events: Array<Processes.EventLine> = []
          const ports = yield* Effect.forEach([0, 1, 2], () => TestPg.freePort)
          const startRunner = (index: number) =>
            Effect.promise(() => Processes.runner(index, ports[index]!, env, (event) => events.push(event)))
          const runners = yield* Effect.forEach([0, 1, 2], startRunner, { concurrency: "unbounded" })
          yield* Effect.addFinalizer(() => Effect.forEach(runners, (child) => Processes.stop(child, 5_000)))

          const requestIds = Array.from({ length: quotes }, (_, i) => `cluster-${i}-${Date.now().toString(36)}`)
          const outcomes = new Map<string, Exit.Exit<unknown, unknown>>()
          const client = yield* Layer.build(clientNode(db))
          const api = Context.get(client, DurableQuotes.DurableQuotes)
          const announced = new Map<string, Outcomes.Outcome>()
          const waiters = new Map(requestIds.map((requestId) => [requestId, Deferred.makeUnsafe<void>()]))
          yield* Context.get(client, Outcomes.Outcomes).subscribe.pipe(
            Stream.runForEach((outcome) =>
              Effect.sync(() => {
                announced.set(outcome.requestId, outcome)
                const waiter = waiters.get(outcome.requestId)
                if (waiter !== undefined) Deferred.doneUnsafe(waiter, Exit.void)
              })
            ),
            Effect.forkScoped
          )

          // a client keeping `inFlight` quotes going: submit (durably recorded once it returns), then read
          // the outcome once announced (`Outcomes`), or by polling `result` if no announcement came in 30 s:
          // 400 quotes each polling `result` would load the database more than the runners do
          const submitFailures: Array<string> = []
          let submitted = 0
          const awaitOutcome = (requestId: string) =>
            Effect.raceFirst(
              Effect.andThen(Deferred.await(waiters.get(requestId)!), Effect.exit(api.result(requestId))),
              Effect.delay(Effect.exit(api.result(requestId)), "30 seconds")
            )
          const run = Effect.forEach(requestIds, (requestId, index) =>
            api.submit({ cardNumber: cardNumber(index), pinNumber: pinSentinel, productLineId: "1000" }, { requestId })
              .pipe(
                Effect.tap(() =>
                  Effect.sync(() => submitted++)
                ),
                Effect.andThen(awaitOutcome(requestId)),
                Effect.tap((exit) => Effect.sync(() => outcomes.set(requestId, exit))),
                Effect.catchCause((cause) => Effect.sync(() => submitFailures.push(Cause.pretty(cause))))
              ), { concurrency: inFlight, discard: true })
          const startedAt = Date.now()
          const runFiber = yield* Effect.forkChild(run)

          /** The quotes each runner holds: a transaction with events on it and no terminal event yet. */
          const holdings = () => {
            const held = [new Set<string>(), new Set<string>(), new Set<string>()]
            for (const event of events) {
              if (event.tag === "Completed" || event.tag === "Failed") {
                held[event.runner]!.delete(event.transactionId)
              } else held[event.runner]!.add(event.transactionId)
            }
            return held
          }
          // the kill: once `killInFlight` quotes are in flight, of the runner that holds the most, once it
          // holds a quarter of them (a quote is held from its runner's first event, after its POST)
          const moment = () => {
            const atKill = holdings()
            const victim = atKill.reduce((best, held, index) =>
              held.size > atKill[best]!.size ? index : best, 0)
            return { atKill, victim, held: atKill[victim]!, inFlightAtKill: submitted - outcomes.size }
          }
          const { atKill, held, inFlightAtKill, victim } = yield* Effect.repeat(Effect.sync(moment), {
            until: ({ held, inFlightAtKill }) => inFlightAtKill >= killInFlight && held.size >= inFlightAtKill / 4,
            schedule: Schedule.spaced("20 millis")
          }).pipe(Effect.timeout("5 minutes"))
          runners[victim]!.process.kill("SIGKILL")
          const killedAt = Date.now()
          console.log(
            `kill of runner ${victim} at ${outcomes.size} outcomes, ${inFlightAtKill} in flight, ${
              ((killedAt - startedAt) / 1000).toFixed(1)
            } s after the start: it held ${held.size} (${
              (100 * held.size / inFlightAtKill).toFixed(0)
            } %); the others ${atKill.filter((_, i) => i !== victim).map((h) => h.size).join(", ")}`
          )
          expect(held.size).toBeGreaterThanOrEqual(inFlightAtKill / 4)
          // the rolling restart of the other two, once the failover is under way
          yield* Effect.sleep("10 seconds")
          for (const index of [0, 1, 2].filter((i) => i !== victim)) {
            yield* Processes.stop(runners[index]!)
            runners[index] = yield* startRunner(index)
            yield* Effect.sleep("5 seconds")
          }
          console.log(
            `rolling restart done at ${outcomes.size} outcomes, ${((Date.now() - startedAt) / 1000).toFixed(1)} s`
          )
          yield* Fiber.await(runFiber).pipe(Effect.timeout("10 minutes"))
          console.log(`all outcomes after ${((Date.now() - startedAt) / 1000).toFixed(1)} s`)

          // every quote: exactly one outcome, and result() on the client returns it
          expect(submitFailures.slice(0, 2)).toEqual([])
          expect(outcomes.size).toBe(quotes)
          const again = yield* Effect.forEach(requestIds, (requestId) => Effect.exit(api.result(requestId)), {
            concurrency: 50
          })
          let lost = 0
          requestIds.forEach((requestId, i) => {
            const first = outcomes.get(requestId)
            if (first === undefined) {
              lost++
            } else expect(Exit.isSuccess(again[i]!) === Exit.isSuccess(first)).toBe(true)
          })
          const failures = [...outcomes.values()].filter(Exit.isFailure)
          expect(
            failures.map((exit) => String(exit)).slice(0, 3)
          ).toEqual([])

          // every outcome was announced to this node's Outcomes subscriber, with its transactionId
          yield* Effect.sleep("1 second")
          const unannounced = requestIds.filter((requestId) => {
            const exit = outcomes.get(requestId)
            const outcome = announced.get(requestId)
            return exit === undefined || outcome === undefined ||
              (Exit.isSuccess(exit) &&
                (exit.value as { transactionId: string }).transactionId !== outcome.transactionId)
          })
          expect(unannounced).toEqual([])

          // exactly one sandbox transaction per requestId, no second transaction-creating POST
          const transactions = yield* transactionsOf(endpoint)
          const perRequest = new Map<string, number>()
          for (const t of transactions) perRequest.set(t.requestId, (perRequest.get(t.requestId) ?? 0) + 1)
          const duplicates = requestIds.filter((id) => (perRequest.get(id) ?? 0) > 1).length
          const missing = requestIds.filter((id) => (perRequest.get(id) ?? 0) === 0).length
          const journal = yield* journalOf(endpoint)
          const secondCreates = requestIds.filter((id) => (journal.transactionsByRequestId[id]?.length ?? 0) > 1)
          expect({ lost, duplicates, missing, secondCreates: secondCreates.length }).toEqual({
            lost: 0,
            duplicates: 0,
            missing: 0,
            secondCreates: 0
          })

          // failover: from the kill to the next GET of each quote the killed runner held
          const nextGet = new Map<string, number>()
          for (const entry of journal.entries) {
            const at = DateTime.toEpochMillis(entry.time)
            if (entry.route !== "getTransaction" || entry.transactionId === undefined || at < killedAt) continue
            if (held.has(entry.transactionId) && !nextGet.has(entry.transactionId)) nextGet.set(entry.transactionId, at)
          }
          const delays = [...nextGet.values()].map((at) => (at - killedAt) / 1000).sort((a, b) => a - b)
          console.log(`held by the killed runner: ${held.size}, with a GET after the kill: ${delays.length}`)
          expect(delays.length).toBeGreaterThan(0)
          const p50 = percentile(delays, 0.5)
          const max = delays[delays.length - 1]!
          console.log(
            `cluster${
              insecure ? " (no authentication)" : ""
            }: ${quotes} quotes, 3 runners, 1 killed: ${outcomes.size} outcomes, ${lost} lost, ${duplicates} duplicate transactions, failover p50 ${
              p50.toFixed(1)
            } s max ${max.toFixed(1)} s (${delays.length} held quotes)`
          )

          // at rest: no PIN, card number, client secret, API key or token in any table
          const dump = yield* dumpDatabase.pipe(Effect.provide(PgClient.layer({ url: db.url }), { local: true }))
          expect(dump.tables.length).toBeGreaterThan(3)
          const sentinels = [pinSentinel, partner.clientSecret, partner.apiKey, "Bearer "]
          for (const sentinel of sentinels) expect(dump.text.includes(sentinel), sentinel).toBe(false)
          expect(jwtShape.test(dump.text), "a token at rest").toBe(false)
          const cardsFound = requestIds.filter((_, index) => dump.text.includes(cardNumber(index))).length
          expect(cardsFound).toBe(0)
        }).pipe(Effect.scoped),
      20 * 60_000
    )
  })
})
