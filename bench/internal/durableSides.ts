/**
 * The sides of row 6 (`rows/durable.ts`): one measured run of quotes at a
 * fixed concurrency (CPU of this process and of the database server), quotes
 * one at a time for the time to outcome, PostgreSQL's committed transactions,
 * and the engine's floor on PostgreSQL.
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as PgClient from "@effect/sql-pg/PgClient"
import { ExchangeClient } from "@gcx/http"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as Database from "@gcx/workflow/Database"
import * as Runner from "@gcx/workflow/Runner"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as EngineFloor from "../../packages/workflow/test/utils/engine-floor.js"
import * as Admin from "./Admin.js"
import * as Cpu from "./cpu.js"
import { clientOptions } from "./gcx.js"
import type { Endpoint } from "./SandboxProcess.js"
import * as SideProcess from "./sideProcess.js"
import { percentile, round } from "./stats.js"

/** What one measured run of one side gives. */
export interface Run {
  readonly quotesPerSecond: number
  readonly clientCpuMillisPerQuote: number
  /** The database server's CPU per quote (PostgreSQL), when this machine can see it. */
  readonly serverCpuMillisPerQuote: number | undefined
  readonly failures: number
  readonly createQuoteRequests: number
}

/** Time to outcome of quotes run one at a time. */
export interface Latency {
  readonly p50: number
  readonly p95: number
}

/** CPU per quote of a side: its runner's, plus the database server's when known. */
export const cpuOf = (run: Run): number => run.clientCpuMillisPerQuote + (run.serverCpuMillisPerQuote ?? 0)

/** `quotes` calls, `concurrency` at a time, timed; the number that failed. */
export const measure = <E, R>(
  endpoint: Endpoint,
  quotes: number,
  concurrency: number,
  call: () => Effect.Effect<unknown, E, R>,
  serverCpu: () => number | undefined = () => undefined
): Effect.Effect<Run, never, R> =>
  Effect.gen(function*() {
    yield* Effect.promise(() => Admin.reset(endpoint))
    const serverBefore = serverCpu()
    const cpuBefore = Cpu.selfMillis()
    const started = performance.now()
    const failures = yield* failuresOf(quotes, concurrency, call)
    const wallMillis = performance.now() - started
    const cpuMillis = Cpu.selfMillis() - cpuBefore
    const serverAfter = serverCpu()
    const journal = yield* Effect.promise(() => Admin.journal(endpoint))
    return {
      quotesPerSecond: (quotes * 1000) / wallMillis,
      clientCpuMillisPerQuote: cpuMillis / quotes,
      serverCpuMillisPerQuote: serverBefore === undefined || serverAfter === undefined
        ? undefined
        : (serverAfter - serverBefore) / quotes,
      failures,
      createQuoteRequests: journal.requests.createQuote
    }
  })

/**
 * One measured run of `count` quotes in a side's process (`run <count>`, `internal/sideProcess.ts`),
 * on a reset sandbox: the side's figures per quote, the database server's CPU when `serverCpu` reads
 * it, and the `createQuote` requests the sandbox saw.
 */
export const sideRun = (
  endpoint: Endpoint,
  side: SideProcess.SideProcess,
  count: number,
  serverCpu: () => number | undefined = () => undefined
): Effect.Effect<Run> =>
  Effect.gen(function*() {
    yield* Effect.promise(() => Admin.reset(endpoint))
    const serverBefore = serverCpu()
    const measured = yield* Effect.promise(() => side.send<SideProcess.SideRun>(`run ${count}`))
    const serverAfter = serverCpu()
    const journal = yield* Effect.promise(() => Admin.journal(endpoint))
    return {
      ...SideProcess.perQuote(measured, count, serverBefore, serverAfter),
      createQuoteRequests: journal.requests.createQuote
    }
  })

/**
 * `quotes` calls of `call`, `concurrency` at a time: how many failed. What a side's `run` command
 * measures (`rows/durable-side.ts`, `rows/gateway-side.ts`).
 */
export const failuresOf = <E, R>(
  quotes: number,
  concurrency: number,
  call: () => Effect.Effect<unknown, E, R>
): Effect.Effect<number, never, R> =>
  Effect.map(
    Effect.forEach(Array.from({ length: quotes }), () => Effect.result(call()), { concurrency }),
    (outcomes) => outcomes.filter(Result.isFailure).length
  )

/** `count` quotes one at a time: the time to each outcome, p50 and p95 in ms. */
export const latency = <E, R>(
  count: number,
  call: () => Effect.Effect<unknown, E, R>
): Effect.Effect<Latency, never, R> =>
  Effect.gen(function*() {
    const samples: Array<number> = []
    for (let index = 0; index < count; index++) {
      const started = performance.now()
      yield* Effect.ignore(call())
      samples.push(performance.now() - started)
    }
    return { p50: round(percentile(samples, 50), 1), p95: round(percentile(samples, 95), 1) }
  })

/**
 * The exchange client and the card cipher (of `key`, default a new one) under
 * a durable node. The nodes of one deployment need the same key: a runner
 * cannot open the cards a client-only node sealed with another.
 */
export const runnerDependencies = (endpoint: Endpoint, key: string = CardCipher.generateKey()) =>
  Layer.merge(
    ExchangeClient.layerWith(clientOptions(endpoint)).pipe(Layer.provide(FetchHttpClient.layer), Layer.orDie),
    CardCipher.layer(key)
  )

/**
 * `transactions committed` of `database` so far, as PostgreSQL's statistics tell (read fresh), after
 * `settle` for the backends to flush theirs (11 s covers idle backends: a stopped runner's).
 */
export const committed = (database: string, settle: Duration.Input = "1500 millis") =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    // Busy backends flush their statistics at most once a second, idle ones within 10 s (PostgreSQL 15's
    // idle interval): wait `settle` for them, then read a fresh snapshot.
    yield* Effect.sleep(settle)
    yield* sql`SELECT pg_stat_clear_snapshot()`
    const rows = yield* sql<{ readonly xact_commit: string }>`
      SELECT xact_commit::text AS xact_commit FROM pg_stat_database WHERE datname = ${database}`
    return Number(rows[0]?.xact_commit ?? Number.NaN)
  }).pipe(Effect.orDie)

export const figures = (run: Run, latency?: Latency) => ({
  quotesPerSecond: round(run.quotesPerSecond, 1),
  clientCpuMillisPerQuote: round(run.clientCpuMillisPerQuote, 3),
  serverCpuMillisPerQuote: run.serverCpuMillisPerQuote === undefined ? null : round(run.serverCpuMillisPerQuote, 3),
  failures: run.failures,
  createQuoteRequests: run.createQuoteRequests,
  ...(latency === undefined ? {} : { latencyMillis: latency })
})

/** The engine's floor on PostgreSQL: the same cluster and sharding settings as a runner, without gcx. */
export const floorOnPostgres = (url: Redacted.Redacted, port: number) =>
  EngineFloor.layer.pipe(
    Layer.provideMerge(ClusterWorkflowEngine.layer),
    Layer.provideMerge(NodeClusterSocket.layer({
      storage: "sql",
      shardingConfig: {
        ...Runner.shardingConfig,
        runnerAddress: Option.some(Result.getOrThrow(Runner.parseRunnerAddress(`127.0.0.1:${port}`)))
      }
    })),
    Layer.provideMerge(Database.layer(url)),
    Layer.orDie
  )
