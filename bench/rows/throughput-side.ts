/**
 * One side of row 1 in a process of its own: each side gets its own V8 heap
 * and JIT, as in an application that uses one client. (Hosting every side in
 * one process made the hot paths of Effect's runtime polymorphic over both
 * HTTP clients, and the heaps shared one collector: each side paid for the
 * others.)
 *
 * Answers each line of stdin (`internal/sideProcess.ts`) with one run:
 * `{"wallMillis","cpuMillis","failures"}`, the run's wall time and this
 * process's CPU time. Exits when stdin closes.
 *
 * Usage: node --import tsx bench/rows/throughput-side.ts <endpoint json> <side> <quotes> <concurrency> [otlp url]
 * with side one of raw, gcx (over `FetchHttpClient`), undici (over gcx's `UndiciClient`, what its Node entry
 * points provide), platform (over Effect's `NodeHttpClient.layerUndici`), client, telemetry (undici with
 * metrics and tracing exported over OTLP, as `@gcx/http/Telemetry` sets them up, to the no-op receiver at
 * `otlp url`, or without one to a no-op receiver in this process).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { ExchangeClient } from "@gcx/http"
import * as Telemetry from "@gcx/http/Telemetry"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuotePoller } from "@gcx/poller"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Result from "effect/Result"
import { RawClient } from "../baseline/RawClient.js"
import { clientLayer, instantCard, pollerLayer, rawOptions } from "../internal/gcx.js"
import { pool } from "../internal/pool.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import { measureRun, serve } from "../internal/sideProcess.js"

/** The sides of row 1. */
export const sides = ["gcx", "raw", "client", "undici", "platform", "telemetry"] as const

/** One side of row 1. */
export type Side = typeof sides[number]

/** Makes `quotes` calls, `concurrency` at a time; the number that failed or did not `succeed`. */
const failures = <A, E, R>(
  quotes: number,
  concurrency: number,
  call: () => Effect.Effect<A, E, R>,
  succeeded: (value: A) => boolean = () => true
) =>
  Effect.map(
    Effect.forEach(Array.from({ length: quotes }), () => Effect.result(call()), { concurrency }),
    (outcomes) => outcomes.filter((outcome) => Result.isFailure(outcome) || !succeeded(outcome.success)).length
  )

/** `getQuote` on every quote. */
const gcxSide = (
  endpoint: Endpoint,
  quotes: number,
  concurrency: number,
  http?: Layer.Layer<HttpClient.HttpClient>
) =>
  Effect.flatMap(QuotePoller.QuotePoller, (poller) => failures(quotes, concurrency, () => poller.getQuote(instantCard)))
    .pipe(
      Effect.provide(pollerLayer(endpoint, { http }))
    )

/** The exchange client alone: the same POSTs without the poller (no events, no bus). */
const clientSide = (endpoint: Endpoint, quotes: number, concurrency: number) =>
  Effect.flatMap(
    ExchangeClient.ExchangeClient,
    (client) =>
      failures(quotes, concurrency, () => client.createQuote(instantCard), (created) => created.quote.isCompleted)
  ).pipe(Effect.provide(clientLayer(endpoint)))

const rawSide = async (endpoint: Endpoint, quotes: number, concurrency: number): Promise<number> => {
  const client = new RawClient(rawOptions(endpoint, 0))
  await client.fetchToken()
  let failures = 0
  await pool(quotes, concurrency, () => client.getQuote(instantCard).catch(() => failures++))
  return failures
}

/** A side: one run as a promise of its failures, and what releases what the side holds open. */
interface Runner {
  readonly run: () => Promise<number>
  readonly close: () => Promise<void>
}

const nothingToClose = (): Promise<void> => Promise.resolve()

/** The runner of `side`. */
const runner = (
  side: Side,
  endpoint: Endpoint,
  quotes: number,
  concurrency: number,
  otlpUrl: string | undefined
): Runner => {
  switch (side) {
    case "raw":
      return { run: () => rawSide(endpoint, quotes, concurrency), close: nothingToClose }
    case "gcx":
      return { run: () => Effect.runPromise(gcxSide(endpoint, quotes, concurrency)), close: nothingToClose }
    case "undici":
      // The same getQuote over gcx's undici client (what every Node entry point of gcx provides).
      return {
        run: () => Effect.runPromise(gcxSide(endpoint, quotes, concurrency, UndiciClient.layer)),
        close: nothingToClose
      }
    case "platform":
      // The same getQuote over Effect's own undici client, on the same dispatcher: the platform's cost.
      return {
        run: () => Effect.runPromise(gcxSide(endpoint, quotes, concurrency, NodeHttpClient.layerUndici)),
        close: nothingToClose
      }
    case "client":
      return { run: () => Effect.runPromise(clientSide(endpoint, quotes, concurrency)), close: nothingToClose }
    case "telemetry": {
      // Set up once for the process, as an application does: spans and metrics exported over OTLP/HTTP JSON
      // (metrics every second) to a receiver that reads each export and keeps nothing: at `otlpUrl` (a process
      // of its own, as a collector), or when none is given in this process.
      const runtime = ManagedRuntime.make(Layer.unwrap(Effect.map(
        otlpUrl === undefined
          ? Effect.map(OtlpReceiver.make({ discard: true }), (receiver) => receiver.url)
          : Effect.succeed(otlpUrl),
        (endpoint) => Telemetry.layer({ endpoint, metricExportInterval: "1 second" })
      )))
      // closing the runtime stops the periodic export and the receiver, which would keep the process alive
      // Over undici, as the headline: the goal compares it with the undici side.
      return {
        run: () => runtime.runPromise(gcxSide(endpoint, quotes, concurrency, UndiciClient.layer)),
        close: () => runtime.dispose()
      }
    }
  }
}

const main = () => {
  const [endpoint, side, quotes, concurrency, otlpUrl] = process.argv.slice(2)
  if (!sides.includes(side as Side)) throw new Error(`unknown side: ${side}`)
  const { close, run } = runner(
    side as Side,
    JSON.parse(endpoint!) as Endpoint,
    Number(quotes),
    Number(concurrency),
    otlpUrl
  )
  serve(() => measureRun(run), close)
}

if (process.argv[1]?.endsWith("throughput-side.ts")) main()
