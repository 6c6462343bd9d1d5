/**
 * The child of row 4 (run with --expose-gc). Creates `count` quotes on the
 * slow card with plain POSTs, then measures the heap (after full collections)
 * per quote in flight, twice on the same transactions:
 * - the raw baseline: `RawClient.waitFor` on every quote at once, each parked
 *   on its poll interval (60 s), then aborted;
 * - gcx: `QuotePoller.trackAll` over every quote, drained by one fiber; the
 *   no-op journal, the event bus with one subscriber. Each quote waits, as a
 *   record in the poller's due queue, for the service's hint (the slow card's
 *   ~30 s);
 * - gcx again, for information: `QuotePoller.track` per quote, each drained
 *   by its own root fiber (`runFork`), as a server would from each request's
 *   fiber.
 * Prints one `RESULT <json>` line.
 *
 * Usage: node --expose-gc --import tsx bench/rows/memory-child.ts <endpoint json> <count>
 */
import { QuotePoller } from "@gcx/poller"
import { TestData } from "@gcx/sandbox"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import type { RawQuote } from "../baseline/RawClient.js"
import { RawClient } from "../baseline/RawClient.js"
import * as BusCounter from "../internal/busCounter.js"
import { pollerLayer, rawOptions } from "../internal/gcx.js"
import { pool } from "../internal/pool.js"
import type { Endpoint } from "../internal/SandboxProcess.js"

const endpoint = JSON.parse(process.argv[2]!) as Endpoint
const count = Number(process.argv[3])
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with --expose-gc")

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** Full collections until the heap is quiet; returns the heap then. */
const settledHeap = async (): Promise<number> => {
  for (let i = 0; i < 4; i++) {
    gc()
    await pause(100)
  }
  return process.memoryUsage().heapUsed
}

const main = async () => {
  const runtime = ManagedRuntime.make(pollerLayer(endpoint))
  // One subscriber on the bus, draining it, as an application would have.
  const busEvents = await BusCounter.drain(runtime)

  const createStarted = performance.now()
  const creator = new RawClient(rawOptions(endpoint, 0))
  const created: Array<RawQuote> = []
  const card = {
    cardNumber: TestData.Cards.slow,
    pinNumber: TestData.pin,
    productLineId: TestData.defaultProductLineId
  }
  await pool(count, 64, async () => {
    created.push(await creator.createQuote(card))
  })
  const createSeconds = (performance.now() - createStarted) / 1000

  // The raw baseline.
  const raw = new RawClient(rawOptions(endpoint, 60_000))
  await raw.fetchToken()
  const rawBefore = await settledHeap()
  const abort = new AbortController()
  const waits = created.map((quote) => raw.waitFor(quote, abort.signal).catch(() => undefined))
  await pause(1_000)
  const rawDuring = await settledHeap()
  abort.abort()
  await Promise.all(waits)

  // gcx: every quote in one trackAll stream, drained by one fiber.
  const gcxBefore = await settledHeap()
  const trackStarted = Date.now()
  const all = runtime.runFork(
    Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
      Stream.runDrain(
        poller.trackAll(
          created.map((quote) => ({
            transactionId: quote.transactionId,
            expectedCompletionTime: quote.expectedCompletionTime
          }))
        )
      ))
  )
  await pause(3_000)
  const gcxDuring = await settledHeap()
  const measuredAt = Date.now()
  await runtime.runPromise(Fiber.interrupt(all))

  // gcx: one track stream per quote, each drained by its own root fiber, as a
  // server would from each request's fiber.
  const perQuoteBefore = await settledHeap()
  const fibers = created.map((quote) =>
    runtime.runFork(
      Effect.flatMap(
        QuotePoller.QuotePoller,
        (poller) =>
          Stream.runDrain(poller.track(quote.transactionId, { expectedCompletionTime: quote.expectedCompletionTime }))
      )
    )
  )
  await pause(3_000)
  const perQuoteDuring = await settledHeap()
  await runtime.runPromise(Fiber.interruptAll(fibers))
  process.stdout.write(
    `RESULT ${
      JSON.stringify({
        count,
        createSeconds,
        trackStarted,
        measuredAt,
        busEvents: busEvents(),
        raw: { heapUsedBefore: rawBefore, heapUsedDuring: rawDuring },
        gcx: { heapUsedBefore: gcxBefore, heapUsedDuring: gcxDuring, rss: process.memoryUsage().rss },
        perQuote: { heapUsedBefore: perQuoteBefore, heapUsedDuring: perQuoteDuring }
      })
    }\n`
  )
  process.exit(0)
}

void main()
