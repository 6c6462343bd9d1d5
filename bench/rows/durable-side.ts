/**
 * One side of row 6 in a process of its own (`internal/sideProcess.ts`):
 * in-process `getQuote`, a durable quote embedded on SQLite or on PostgreSQL
 * with one runner, the engine's floor on either, or a runner and a
 * client-only node over the cluster's socket, plain or with mutual TLS. The side's deployment is
 * built at its first command and kept for the process's life, as a service
 * runs; its database is the parent's (a file of its own, or a database on the
 * parent's throwaway PostgreSQL server).
 *
 * Commands, one per line: `run <quotes>` answers `{"wallMillis","cpuMillis","failures"}`
 * (quotes at the side's concurrency; this process's CPU), `latency <count>` answers
 * `{"p50","p95"}` (quotes one at a time, ms). Exits when stdin closes.
 *
 * Usage: node --import tsx bench/rows/durable-side.ts <endpoint json> <side> <options json>
 * with options `{"concurrency", "filename"?, "databaseUrl"?, "port"?}`.
 */
import { QuotePoller } from "@gcx/poller"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as ClusterSecurity from "@gcx/workflow/ClusterSecurity"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import * as Runner from "@gcx/workflow/Runner"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as BenchCertificates from "../../packages/workflow/test/utils/certificates.js"
import * as EngineFloor from "../../packages/workflow/test/utils/engine-floor.js"
import type { Latency } from "../internal/durableSides.js"
import { failuresOf, floorOnPostgres, latency, runnerDependencies } from "../internal/durableSides.js"
import { instantCard, pollerLayer } from "../internal/gcx.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import { measureRun, serve } from "../internal/sideProcess.js"

/** The sides of row 6. */
export const sides = [
  "inProcess",
  "embedded",
  "floor",
  "postgres",
  "floorPostgres",
  "socketPlain",
  "socketTls"
] as const

/** One side of row 6. */
export type Side = typeof sides[number]

/** Where a side keeps its state, and how many quotes it runs at once. */
export interface SideOptions {
  readonly concurrency: number
  /** The SQLite file (embedded and floor). */
  readonly filename?: string | undefined
  /** The PostgreSQL database (postgres, floorPostgres and the socket sides). */
  readonly databaseUrl?: string | undefined
  /** The runner's port (postgres, floorPostgres and the socket sides). */
  readonly port?: number | undefined
}

/** A side's deployment, built at its first use: a measured run, quotes one at a time, and its release. */
interface Deployment {
  readonly run: (quotes: number) => Promise<number>
  readonly latency: (count: number) => Promise<Latency>
  readonly close: () => Promise<void>
}

/** A deployment of `layer` whose quote is `call`, `concurrency` at a time in a run. */
const deploy = <R>(
  layer: Layer.Layer<R>,
  call: () => Effect.Effect<unknown, unknown, R>,
  concurrency: number
): Deployment => {
  const runtime = ManagedRuntime.make(layer)
  return {
    run: (quotes) => runtime.runPromise(failuresOf(quotes, concurrency, call)),
    latency: (count) => runtime.runPromise(latency(count, call)),
    close: () => runtime.dispose()
  }
}

const required = <A>(value: A | undefined, name: string): A => {
  if (value === undefined) throw new Error(`this side needs ${name}`)
  return value
}

const runnerAddress = (port: number) => Result.getOrThrow(Runner.parseRunnerAddress(`127.0.0.1:${port}`))

/**
 * A runner and a client-only node over the cluster's socket with `security`,
 * each built on its own: the quotes are the client's, run by the runner. One
 * data key for both, as in a deployment (the runner opens the cards the
 * client sealed).
 */
const overSocket = (endpoint: Endpoint, options: SideOptions, security: ClusterSecurity.Security) => {
  const key = CardCipher.generateKey()
  const databaseUrl = Redacted.make(required(options.databaseUrl, "a database"))
  const runner = DurableQuotes.layerRunner(
    Runner.layer({ databaseUrl, runnerAddress: runnerAddress(required(options.port, "a port")), security })
  ).pipe(Layer.provide(runnerDependencies(endpoint, key)), Layer.orDie)
  const client = DurableQuotes.layer().pipe(
    Layer.provideMerge(Runner.layerClient({ databaseUrl, security })),
    Layer.provide(CardCipher.layer(key)),
    Layer.orDie
  )
  // the runner built apart (nothing of it is shared with the client), before the client
  return client.pipe(Layer.provide(Layer.effectDiscard(Layer.build(runner))))
}

/** The deployment of `side`: what row 6 measures, each as `rows/durable.ts` describes it. */
const deployment = (endpoint: Endpoint, side: Side, options: SideOptions): Deployment => {
  const { concurrency } = options
  let floorIds = 0
  const executeFloor = () => EngineFloor.execute(`floor-${floorIds++}`)
  const durableQuote = () => Effect.flatMap(DurableQuotes.DurableQuotes, (durable) => durable.execute(instantCard))
  switch (side) {
    case "inProcess":
      return deploy(
        pollerLayer(endpoint),
        () => Effect.flatMap(QuotePoller.QuotePoller, (poller) => poller.getQuote(instantCard)),
        concurrency
      )
    case "embedded":
      return deploy(
        Embedded.layerQuotes({ filename: required(options.filename, "a filename") }).pipe(
          Layer.provide(runnerDependencies(endpoint)),
          Layer.orDie
        ),
        durableQuote,
        concurrency
      )
    case "floor":
      return deploy(
        EngineFloor.layer.pipe(
          Layer.provideMerge(Embedded.layer({ filename: required(options.filename, "a filename") })),
          Layer.orDie
        ),
        executeFloor,
        concurrency
      )
    case "postgres":
      return deploy(
        DurableQuotes.layerRunner(
          Runner.layer({
            databaseUrl: Redacted.make(required(options.databaseUrl, "a database")),
            runnerAddress: runnerAddress(required(options.port, "a port")),
            security: ClusterSecurity.insecureLoopback
          })
        ).pipe(Layer.provide(runnerDependencies(endpoint)), Layer.orDie),
        durableQuote,
        concurrency
      )
    case "floorPostgres":
      return deploy(
        floorOnPostgres(
          Redacted.make(required(options.databaseUrl, "a database")),
          required(options.port, "a port")
        ),
        executeFloor,
        concurrency
      )
    case "socketPlain":
      return deploy(overSocket(endpoint, options, ClusterSecurity.insecureLoopback), durableQuote, concurrency)
    case "socketTls":
      return deploy(
        overSocket(endpoint, options, BenchCertificates.make("bench").security),
        durableQuote,
        concurrency
      )
  }
}

const main = () => {
  const [endpoint, side, options] = process.argv.slice(2)
  if (!sides.includes(side as Side)) throw new Error(`unknown side: ${side}`)
  const { close, latency, run } = deployment(
    JSON.parse(endpoint!) as Endpoint,
    side as Side,
    JSON.parse(options!) as SideOptions
  )
  serve(async (line) => {
    const [command, count] = line.split(" ")
    switch (command) {
      case "run":
        return measureRun(() => run(Number(count)))
      case "latency":
        return latency(Number(count))
      default:
        throw new Error(`unknown command: ${line}`)
    }
  }, close)
}

if (process.argv[1]?.endsWith("durable-side.ts")) main()
