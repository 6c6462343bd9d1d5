/**
 * The child of row 10 (run with --expose-gc): one process quoting for a long
 * time against a sandbox with its faults on, measured after a warm-up and
 * again at the end, each time after full collections, with a heap snapshot at
 * both points for the parent to diff (when asked: writing one grows the RSS,
 * so the parent runs a second child for them).
 *
 * - `in-process`: `QuotePoller.getQuote` over gcx's `UndiciClient`,
 *   the event bus drained by one subscriber, the no-op journal;
 * - `durable`: `DurableQuotes.execute` embedded on SQLite (a file in `dir`);
 * - `raw`: the baseline, the raw `fetch` client (`bench/baseline/RawClient.ts`)
 *   on the same cards, for the memory a plain Node HTTP client keeps.
 *
 * The cards mix the instant card (most), the 2 s card (polled; the sandbox's
 * time scale makes it short), an invalid card and a merchant that is
 * unavailable. Prints one `RESULT <json>` line.
 *
 * Usage: node --expose-gc --import tsx bench/rows/soak-child.ts <endpoint json> <in-process|durable|raw>  <warmup> <quotes> <dir> [snapshots]
 */
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import type { QuoteEvents } from "@gcx/poller"
import { QuotePoller } from "@gcx/poller"
import { TestData } from "@gcx/sandbox"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as path from "node:path"
import * as v8 from "node:v8"
import { RawClient } from "../baseline/RawClient.js"
import * as BusCounter from "../internal/busCounter.js"
import { clientOptions, pollerLayer, rawOptions } from "../internal/gcx.js"
import { pool } from "../internal/pool.js"
import type { Endpoint } from "../internal/SandboxProcess.js"

/** What the child reports. */
export interface SoakChildResult {
  readonly mode: "in-process" | "durable" | "raw"
  readonly warmup: number
  readonly quotes: number
  readonly seconds: number
  readonly failures: number
  readonly busEvents: number
  readonly afterWarmup: Memory
  readonly afterRun: Memory
  readonly snapshots: { readonly afterWarmup: string; readonly afterRun: string } | undefined
}

/** The process's memory after full collections. */
export interface Memory {
  readonly rss: number
  readonly heapUsed: number
  readonly heapTotal: number
  readonly external: number
  readonly arrayBuffers: number
}

/** The client's settings: enough retries that faults end in a quote, as in the chaos suite. */
export const clientSettings = {
  requestTimeout: "5 seconds",
  retry: {
    maxAttempts: 10,
    baseDelay: "20 millis",
    maxDelay: "500 millis",
    budget: { capacity: 10_000, refillPerSecond: 1_000 }
  }
} as const

const cardFor = (index: number) => ({
  cardNumber: index % 20 === 0
    ? TestData.Cards.invalid
    : index % 20 === 1
    ? TestData.Cards.merchantUnavailable
    : index % 4 === 2
    ? TestData.Cards.success
    : TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
})

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/**
 * The memory once the process is quiet: after `waitMillis` (the cluster reaps a finished workflow's entity
 * only after its idle time, 5 s, checked every 5 s), then four full collections.
 */
const settled = async (waitMillis: number): Promise<Memory> => {
  const gc = (globalThis as { gc?: (options?: object) => void }).gc
  if (gc === undefined) throw new Error("run with --expose-gc")
  await pause(waitMillis)
  // Memory-reducing collections ("last resort", as under memory pressure): V8 gives back the pages of
  // its young generation, which a plain gc() leaves reserved (the RSS then swings by 100 MiB and more
  // with the young generation's size, even for the raw fetch loop).
  for (let i = 0; i < 4; i++) {
    gc({ type: "major", execution: "sync", flavor: "last-resort" })
    await pause(100)
  }
  const { arrayBuffers, external, heapTotal, heapUsed, rss } = process.memoryUsage()
  return { rss, heapUsed, heapTotal, external, arrayBuffers }
}

/** What an Effect mode runs: its layer (the bus among its services) and one quote. */
interface Mode<R> {
  readonly layer: Layer.Layer<R | QuoteEvents.QuoteEvents>
  readonly quote: (index: number) => Effect.Effect<unknown, unknown, R>
  readonly concurrency: number
}

/** A mode's runner: `count` more quotes, and how many failed; `close` releases what it holds. */
interface Runner {
  readonly run: (count: number) => Promise<number>
  readonly busEvents: () => number
  readonly close: () => Promise<void>
}

const effectRunner = async <R>({ concurrency, layer, quote }: Mode<R>): Promise<Runner> => {
  const runtime = ManagedRuntime.make(layer)
  const busEvents = await BusCounter.drain(runtime)
  let next = 0
  return {
    run: (count) =>
      runtime.runPromise(Effect.map(
        Effect.forEach(Array.from({ length: count }), () => Effect.result(Effect.suspend(() => quote(next++))), {
          concurrency
        }),
        (results) => results.filter((result) => result._tag === "Failure").length
      )),
    busEvents,
    close: () => runtime.dispose()
  }
}

/** The baseline: the raw `fetch` client (no retries: a fault fails its quote), 64 at a time. */
const rawRunner = async (endpoint: Endpoint): Promise<Runner> => {
  const client = new RawClient(rawOptions(endpoint, 20))
  // the sandbox's faults reach the token endpoint too: the first token is tried again (at most 20 times)
  for (let attempt = 1;; attempt++) {
    try {
      await client.fetchToken()
      break
    } catch (error) {
      if (attempt >= 20) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  let next = 0
  return {
    run: async (count) => {
      let failures = 0
      await pool(count, 64, () => client.getQuote(cardFor(next++)).catch(() => failures++))
      return failures
    },
    busEvents: () => 0,
    close: () => Promise.resolve()
  }
}

const soak = async (
  mode: SoakChildResult["mode"],
  runner: Runner,
  warmup: number,
  quotes: number,
  dir: string,
  snapshotting: boolean
): Promise<SoakChildResult> => {
  const waitMillis = mode === "durable" ? Number(process.env.GCX_SOAK_SETTLE_MS ?? 11_000) : 0
  const { run } = runner
  let failures = await run(warmup)
  const afterWarmup = await settled(waitMillis)
  const first = snapshotting ? v8.writeHeapSnapshot(path.join(dir, `${mode}-warmup.heapsnapshot`)) : undefined
  const started = performance.now()
  // In slices, so that the outcomes of every quote are not held at once.
  for (let done = 0; done < quotes; done += 1_000) failures += await run(Math.min(1_000, quotes - done))
  const seconds = (performance.now() - started) / 1000
  const afterRun = await settled(waitMillis)
  const second = snapshotting ? v8.writeHeapSnapshot(path.join(dir, `${mode}-end.heapsnapshot`)) : undefined
  await runner.close()
  return {
    mode,
    warmup,
    quotes,
    seconds,
    failures,
    busEvents: runner.busEvents(),
    afterWarmup,
    afterRun,
    snapshots: first !== undefined && second !== undefined ? { afterWarmup: first, afterRun: second } : undefined
  }
}

const main = async () => {
  const endpoint = JSON.parse(process.argv[2]!) as Endpoint
  const mode = process.argv[3] as SoakChildResult["mode"]
  const warmup = Number(process.argv[4])
  const quotes = Number(process.argv[5])
  const dir = process.argv[6]!
  // Writing a heap snapshot grows the RSS for good: a run that measures the RSS writes none.
  const snapshotting = process.argv[7] === "snapshots"
  const client = ExchangeClient.layerWith(clientOptions(endpoint, clientSettings)).pipe(
    Layer.provide(UndiciClient.layer),
    Layer.orDie
  )
  const runner = mode === "raw"
    ? await rawRunner(endpoint)
    : mode === "durable"
    ? await effectRunner({
      layer: Embedded.layerQuotes({ filename: path.join(dir, `soak-${process.pid}.db`) }).pipe(
        Layer.provide(Layer.merge(client, CardCipher.layer(CardCipher.generateKey()))),
        Layer.orDie
      ),
      quote: (index) => Effect.flatMap(DurableQuotes.DurableQuotes, (durable) => durable.execute(cardFor(index))),
      concurrency: 32
    })
    : await effectRunner({
      layer: pollerLayer(endpoint, { client: clientSettings, http: UndiciClient.layer }),
      quote: (index) => Effect.flatMap(QuotePoller.QuotePoller, (poller) => poller.getQuote(cardFor(index))),
      concurrency: 64
    })
  const result = await soak(mode, runner, warmup, quotes, dir, snapshotting)
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
  process.exit(0)
}

if (process.argv[1]?.endsWith("soak-child.ts")) void main()
