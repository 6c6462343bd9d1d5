/**
 * Row 4, memory: quotes on the slow card tracked at once; the heap per quote
 * in flight, measured in a child process run with --expose-gc
 * (`memory-child.ts`) after full collections, before and while every quote is
 * tracked, for gcx and for the raw baseline. The child uses the no-op journal
 * (no durability: the journal's own storage is not counted) and the event bus
 * with one subscriber. The goal is measured on `trackAll` (every quote in one
 * stream); a second line shows, for information, what one `track` stream and
 * one root fiber per quote cost.
 *
 * The sandbox runs at timeScale 3 (the slow card takes 90 s instead of 30 s),
 * because creating 10,000 quotes takes about 30 s here: every quote must still
 * be in flight on the server when the heap is measured.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Admin from "../internal/Admin.js"
import * as Child from "../internal/child.js"
import { inBench } from "../internal/paths.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { round } from "../internal/stats.js"

/** What the child reports. */
interface ChildResult {
  readonly count: number
  readonly createSeconds: number
  readonly trackStarted: number
  readonly measuredAt: number
  readonly busEvents: number
  readonly raw: { readonly heapUsedBefore: number; readonly heapUsedDuring: number }
  readonly gcx: { readonly heapUsedBefore: number; readonly heapUsedDuring: number; readonly rss: number }
  readonly perQuote: { readonly heapUsedBefore: number; readonly heapUsedDuring: number }
}

const runChild = (endpoint: Endpoint, count: number) =>
  Effect.tryPromise({
    try: () =>
      Child.resultOf<ChildResult>("memory", inBench("rows", "memory-child.ts"), [
        JSON.stringify(endpoint),
        String(count)
      ]),
    catch: (error) => error as Error
  })

/** Runs row 4. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    const quotes = context.quick ? 1_000 : 10_000
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 3 }])
    context.log(`memory: creating and tracking ${fmt(quotes)} slow-card quotes`)
    const result = yield* runChild(sandbox.endpoint, quotes)
    const transactions = yield* Effect.promise(() => Admin.transactions(sandbox.endpoint))
    // pending now, or completed after the measurement: in flight when measured
    const inFlight = transactions.filter((transaction) =>
      transaction.completionTime === undefined || DateTime.toEpochMillis(transaction.completionTime) > result.measuredAt
    ).length
    const bytesPerQuote = (result.gcx.heapUsedDuring - result.gcx.heapUsedBefore) / quotes
    const rawBytesPerQuote = (result.raw.heapUsedDuring - result.raw.heapUsedBefore) / quotes
    const perQuoteBytes = (result.perQuote.heapUsedDuring - result.perQuote.heapUsedBefore) / quotes
    return {
      number: 4,
      id: "memory",
      title: "Memory",
      baseline: "raw client: an async GET loop per quote, parked on its 60 s poll interval",
      params: {
        quotes,
        card: "slow (90 s: timeScale 3)",
        created: "plain POSTs, 64 at a time, before tracking",
        gcx: "QuotePoller.trackAll over every quote, drained by one fiber",
        perQuote: "QuotePoller.track per quote, each drained by its own root fiber (runFork): for information",
        journal: "QuoteJournal.layerNoop",
        bus: "QuoteEvents.layer(), 1 subscriber"
      },
      figures: {
        ...result,
        serverTransactions: transactions.length,
        inFlightAtMeasurement: inFlight,
        heapBytesPerQuote: round(bytesPerQuote, 0),
        rawHeapBytesPerQuote: round(rawBytesPerQuote, 0),
        perQuoteTrackHeapBytesPerQuote: round(perQuoteBytes, 0),
        ratio: round(bytesPerQuote / rawBytesPerQuote, 2)
      },
      lines: [
        {
          measure: `heap bytes per quote in flight (${fmt(quotes)} tracked at once, slow card)`,
          gcx: fmt(bytesPerQuote),
          baseline: fmt(rawBytesPerQuote),
          ratio: fmt(bytesPerQuote / rawBytesPerQuote, 1),
          goal: "memory.heapBytesPerQuote"
        },
        {
          measure: "the same, one `track` stream and root fiber per quote (for information)",
          gcx: fmt(perQuoteBytes),
          baseline: fmt(rawBytesPerQuote),
          ratio: fmt(perQuoteBytes / rawBytesPerQuote, 1)
        }
      ],
      goals: [goal("memory.heapBytesPerQuote", "heap bytes per quote in flight", "<=", 4_096, round(bytesPerQuote, 0))],
      notes: inFlight < quotes ? [`only ${inFlight} of ${quotes} quotes were still in flight when measured`] : [],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
