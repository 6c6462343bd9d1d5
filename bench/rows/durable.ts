/**
 * Row 6, the cost of durability: `DurableQuotes.execute` on the instant card,
 * embedded (the cluster's `SingleRunner` over SQLite in a temporary file) and
 * on PostgreSQL with one runner (a throwaway server, `initdb` + `pg_ctl`,
 * started by the row), against in-process `QuotePoller.getQuote`, all three
 * in this process, one after the other, on the same sandbox process. Each
 * side is warmed up first, then measured with a fixed concurrency; the sandbox
 * is reset between runs. CPU is this process's: for the durable sides it
 * includes the runner (workflow engine, SQLite driver or PostgreSQL client),
 * which is what a node pays per quote; the PostgreSQL server's own CPU is not
 * counted. Database transactions per quote: the delta of
 * `pg_stat_database.xact_commit` for the gcx database over the measured run
 * (the runner's background heartbeats and storage polls included).
 *
 * The cost of authentication: a runner and a client-only node in this process, each built on its
 * own, the client's quotes reaching the runner over the cluster's socket: plain TCP on loopback, then
 * mutual TLS (`ClusterSecurity`), same database, same run; CPU is both nodes'.
 *
 * For information, the engine's floor: a workflow whose one activity does
 * nothing (`packages/workflow/test/utils/engine-floor.ts`), on the embedded
 * deployment, measured the same way: what `@effect/workflow` and
 * `@effect/cluster` cost for the shape of an instant quote, which no change in
 * gcx can cut.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { ExchangeClient } from "@gcx/http"
import { QuotePoller } from "@gcx/poller"
import { TestData } from "@gcx/sandbox"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as ClusterSecurity from "@gcx/workflow/ClusterSecurity"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import * as Runner from "@gcx/workflow/Runner"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BenchCertificates from "../../packages/workflow/test/utils/certificates.js"
import * as EngineFloor from "../../packages/workflow/test/utils/engine-floor.js"
import * as PgTest from "../../packages/workflow/test/utils/postgres.js"
import * as Admin from "../internal/Admin.js"
import * as Cpu from "../internal/cpu.js"
import { clientOptions, pollerLayer } from "../internal/gcx.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { round } from "../internal/stats.js"

const card = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}

/** What one measured run of one side gives. */
interface Run {
  readonly quotesPerSecond: number
  readonly clientCpuMillisPerQuote: number
  readonly failures: number
  readonly createQuoteRequests: number
}

/** `quotes` calls, `concurrency` at a time, timed; the number that failed. */
const measure = <E, R>(
  endpoint: Endpoint,
  quotes: number,
  concurrency: number,
  call: () => Effect.Effect<unknown, E, R>
): Effect.Effect<Run, never, R> =>
  Effect.gen(function*() {
    yield* Effect.promise(() => Admin.reset(endpoint))
    const cpuBefore = Cpu.selfMillis()
    const started = performance.now()
    const outcomes = yield* Effect.forEach(Array.from({ length: quotes }), () => Effect.result(call()), {
      concurrency
    })
    const wallMillis = performance.now() - started
    const cpuMillis = Cpu.selfMillis() - cpuBefore
    const journal = yield* Effect.promise(() => Admin.journal(endpoint))
    return {
      quotesPerSecond: (quotes * 1000) / wallMillis,
      clientCpuMillisPerQuote: cpuMillis / quotes,
      failures: outcomes.filter(Result.isFailure).length,
      createQuoteRequests: journal.requests.createQuote
    }
  })

/** The exchange client and the card cipher under a durable node. */
const runnerDependencies = (endpoint: Endpoint) =>
  Layer.merge(
    ExchangeClient.layerWith(clientOptions(endpoint)).pipe(Layer.provide(FetchHttpClient.layer), Layer.orDie),
    CardCipher.layer(CardCipher.generateKey())
  )

/** `transactions committed` of the gcx database so far, as PostgreSQL's statistics tell (read fresh). */
const committed = (database: string) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    // Backends flush their statistics at most once a second: wait for them, then read a fresh snapshot.
    yield* Effect.sleep("1500 millis")
    yield* sql`SELECT pg_stat_clear_snapshot()`
    const rows = yield* sql<{ readonly xact_commit: string }>`
      SELECT xact_commit::text AS xact_commit FROM pg_stat_database WHERE datname = ${database}`
    return Number(rows[0]?.xact_commit ?? Number.NaN)
  }).pipe(Effect.orDie)

const figures = (run: Run) => ({
  quotesPerSecond: round(run.quotesPerSecond, 1),
  clientCpuMillisPerQuote: round(run.clientCpuMillisPerQuote, 3),
  failures: run.failures,
  createQuoteRequests: run.createQuoteRequests
})

/** Runs row 6. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    const quotes = context.quick ? 100 : 600
    const warmup = context.quick ? 50 : 200
    const concurrency = 32
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 1 }])
    const endpoint = sandbox.endpoint

    context.log("durable: in-process getQuote")
    const inProcess = yield* Effect.gen(function*() {
      const poller = yield* QuotePoller.QuotePoller
      yield* measure(endpoint, warmup, concurrency, () => poller.getQuote(card))
      return yield* measure(endpoint, quotes, concurrency, () => poller.getQuote(card))
    }).pipe(Effect.provide(pollerLayer(endpoint)))

    context.log("durable: embedded (SQLite)")
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "gcx-bench-durable-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const embedded = yield* Effect.gen(function*() {
      const durable = yield* DurableQuotes.DurableQuotes
      yield* measure(endpoint, warmup, concurrency, () => durable.execute(card))
      return yield* measure(endpoint, quotes, concurrency, () => durable.execute(card))
    }).pipe(
      Effect.provide(
        Embedded.layerQuotes({ filename: path.join(dir, "gcx.db") }).pipe(
          Layer.provide(runnerDependencies(endpoint)),
          Layer.orDie
        )
      ),
      Effect.scoped
    )

    context.log("durable: the engine's floor, embedded (a no-op workflow of one no-op activity)")
    let floorIds = 0
    const floor = yield* Effect.gen(function*() {
      const executeFloor = () => EngineFloor.execute(`floor-${floorIds++}`)
      yield* measure(endpoint, warmup, concurrency, executeFloor)
      return yield* measure(endpoint, quotes, concurrency, executeFloor)
    }).pipe(
      Effect.provide(
        EngineFloor.layer.pipe(
          Layer.provideMerge(Embedded.layer({ filename: path.join(dir, "floor.db") })),
          Layer.orDie
        )
      ),
      Effect.scoped
    )

    context.log("durable: PostgreSQL, one runner (starting a throwaway server)")
    const database = yield* PgTest.make()
    const databaseName = new URL(database.urlString).pathname.slice(1)
    const runnerPort = yield* PgTest.freePort
    const postgres = yield* Effect.gen(function*() {
      const durable = yield* DurableQuotes.DurableQuotes
      yield* measure(endpoint, warmup, concurrency, () => durable.execute(card))
      const before = yield* committed(databaseName)
      const measured = yield* measure(endpoint, quotes, concurrency, () => durable.execute(card))
      const after = yield* committed(databaseName)
      return { ...measured, transactionsPerQuote: (after - before) / quotes }
    }).pipe(
      Effect.provide(
        DurableQuotes.layerRunner(
          Runner.layer({
            databaseUrl: database.url,
            runnerAddress: Result.getOrThrow(Runner.parseRunnerAddress(`127.0.0.1:${runnerPort}`)),
            security: ClusterSecurity.insecureLoopback
          })
        ).pipe(Layer.provide(runnerDependencies(endpoint)), Layer.orDie)
      ),
      // A connection of its own for the statistics: its few reads are in the delta, a rounding error.
      Effect.provide(PgClient.layer({ url: database.url }).pipe(Layer.orDie)),
      Effect.scoped
    )

    // authentication's cost: a runner and a client-only node, each built on its own, talking over the
    // cluster's socket, plain TCP on loopback then mutual TLS, on the same database one after the other
    const overSocket = (security: ClusterSecurity.Security, label: string) =>
      Effect.gen(function*() {
        context.log(`durable: PostgreSQL, a runner and a client-only node over ${label}`)
        const port = yield* PgTest.freePort
        yield* Layer.build(
          DurableQuotes.layerRunner(
            Runner.layer({
              databaseUrl: database.url,
              runnerAddress: Result.getOrThrow(Runner.parseRunnerAddress(`127.0.0.1:${port}`)),
              security
            })
          ).pipe(Layer.provide(runnerDependencies(endpoint)), Layer.orDie)
        )
        const client = yield* Layer.build(
          DurableQuotes.layer().pipe(
            Layer.provideMerge(Runner.layerClient({ databaseUrl: database.url, security })),
            Layer.provide(CardCipher.layer(CardCipher.generateKey())),
            Layer.orDie
          )
        )
        const durable = Context.get(client, DurableQuotes.DurableQuotes)
        yield* measure(endpoint, warmup, concurrency, () => durable.execute(card))
        return yield* measure(endpoint, quotes, concurrency, () => durable.execute(card))
      }).pipe(Effect.scoped)
    const plainSocket = yield* overSocket(ClusterSecurity.insecureLoopback, "plain TCP on loopback")
    const tlsSocket = yield* overSocket(BenchCertificates.make("bench").security, "mutual TLS")
    const authCpuMillisPerQuote = tlsSocket.clientCpuMillisPerQuote - plainSocket.clientCpuMillisPerQuote

    const embeddedRatio = round(embedded.quotesPerSecond / inProcess.quotesPerSecond, 3)
    const postgresRatio = round(postgres.quotesPerSecond / inProcess.quotesPerSecond, 3)
    const transactionsPerQuote = round(postgres.transactionsPerQuote, 2)
    const cpuLine = (measure: string, side: Run) => ({
      measure,
      gcx: fmt(side.clientCpuMillisPerQuote, 2),
      baseline: fmt(inProcess.clientCpuMillisPerQuote, 2),
      ratio: fmt(side.clientCpuMillisPerQuote / inProcess.clientCpuMillisPerQuote, 2)
    })
    return {
      number: 6,
      id: "durable",
      title: "Cost of durability",
      baseline: "in-process QuotePoller.getQuote on the same sandbox",
      params: {
        quotes,
        warmup,
        concurrency,
        card: "instant",
        rounds: 1,
        processes: "the sides in the bench process, one after the other; the sandbox in its own process; " +
          "PostgreSQL 15 a throwaway server (fsync off, as the test helper starts it)"
      },
      figures: {
        inProcess: figures(inProcess),
        embedded: figures(embedded),
        engineFloor: figures(floor),
        postgres: { ...figures(postgres), transactionsPerQuote },
        clientOnlyPlain: figures(plainSocket),
        clientOnlyTls: figures(tlsSocket),
        authCpuMillisPerQuote: round(authCpuMillisPerQuote, 3),
        embeddedRatio,
        postgresRatio
      },
      lines: [
        {
          measure: `quotes/s, DurableQuotes.execute embedded on SQLite (${
            fmt(quotes)
          } quotes, concurrency ${concurrency}, instant card)`,
          gcx: fmt(embedded.quotesPerSecond),
          baseline: fmt(inProcess.quotesPerSecond),
          ratio: fmt(embeddedRatio, 2),
          goal: "durable.ratio.sqlite"
        },
        cpuLine("client CPU ms per quote, execute embedded on SQLite (runner included)", embedded),
        {
          measure: "the engine's floor embedded on SQLite: quotes/s of a no-op workflow of one no-op activity " +
            "(no POST, counter, cipher or gcx schema; for information)",
          gcx: fmt(floor.quotesPerSecond),
          baseline: fmt(inProcess.quotesPerSecond),
          ratio: fmt(floor.quotesPerSecond / inProcess.quotesPerSecond, 2)
        },
        cpuLine("client CPU ms per execution, the engine's floor embedded on SQLite", floor),
        {
          measure: "quotes/s, DurableQuotes.execute on PostgreSQL, one runner",
          gcx: fmt(postgres.quotesPerSecond),
          baseline: fmt(inProcess.quotesPerSecond),
          ratio: fmt(postgresRatio, 2),
          goal: "durable.ratio.postgres"
        },
        cpuLine("client CPU ms per quote, execute on PostgreSQL (runner included)", postgres),
        {
          measure: "authentication: quotes/s of a client-only node and a runner over mutual TLS (baseline: " +
            "the same over plain TCP on loopback, same run)",
          gcx: fmt(tlsSocket.quotesPerSecond),
          baseline: fmt(plainSocket.quotesPerSecond),
          ratio: fmt(tlsSocket.quotesPerSecond / plainSocket.quotesPerSecond, 2)
        },
        {
          measure: "authentication: CPU ms per quote of both nodes (this process) over mutual TLS " +
            `(baseline: plain TCP; +${fmt(authCpuMillisPerQuote, 2)} ms per quote)`,
          gcx: fmt(tlsSocket.clientCpuMillisPerQuote, 2),
          baseline: fmt(plainSocket.clientCpuMillisPerQuote, 2),
          ratio: fmt(tlsSocket.clientCpuMillisPerQuote / plainSocket.clientCpuMillisPerQuote, 2)
        },
        {
          measure: "PostgreSQL transactions per quote (pg_stat_database.xact_commit delta)",
          gcx: fmt(transactionsPerQuote, 1),
          baseline: "-",
          ratio: "-",
          goal: "durable.transactions"
        }
      ],
      goals: [
        goal(
          "durable.ratio.sqlite",
          "execute embedded on SQLite quotes/s ÷ in-process getQuote quotes/s",
          ">=",
          0.5,
          embeddedRatio
        ),
        goal(
          "durable.ratio.postgres",
          "execute on PostgreSQL with one runner quotes/s ÷ in-process getQuote quotes/s",
          ">=",
          0.5,
          postgresRatio
        ),
        goal(
          "durable.transactions",
          "PostgreSQL transactions committed per quote (xact_commit delta over the measured run)",
          "<=",
          10,
          transactionsPerQuote
        )
      ],
      notes: [
        "failover is measured by pnpm test:cluster (3 runners on PostgreSQL, the one holding the most quotes " +
        "SIGKILLed once 30 % are in flight; goal max ≤ 15 s), not by the bench: its line and figures are in docs/durable.md."
      ],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
