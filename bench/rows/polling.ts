/**
 * Row 3, polling: quotes whose completion times are spread over 1–5 s, polled
 * with the default schedule (the service's hint, then backoff) and with a
 * fixed 1 s interval. Measures GETs per quote (the sandbox's journal) and the
 * delay between the server completing a quote (its `completionTime`, from the
 * admin API) and the client emitting `Completed` (the event's timestamp);
 * both clocks are this machine's.
 *
 * The sandbox has no per-card duration, so the spread comes from several
 * sandboxes in one host process, each with its own `timeScale`: the derived
 * card takes 2 s at timeScale 1, so timeScale d/2 makes it take d seconds,
 * for d evenly spread from 1 to 5 s. Quotes are dealt to them in turn, and
 * submitted at a steady 100 quotes/s (one every 10 ms) rather than in one
 * burst: a burst of 200 POSTs queues in the client and on the server, and its
 * POST latency (up to a second here) would be measured instead of the
 * schedule.
 */
import type { QuoteEvent } from "@gcx/core"
import { PollSchedule, QuotePoller } from "@gcx/poller"
import { TestData } from "@gcx/sandbox"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Admin from "../internal/Admin.js"
import { pollerLayer } from "../internal/gcx.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { mean, round, summary } from "../internal/stats.js"

/** The duration of the derived card at timeScale 1. */
const derivedMillis = 2_000

/** A card outside the scenario table: success after the derived duration. */
const cardFor = (index: number) => ({
  cardNumber: `4000${String(index).padStart(12, "0")}`,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
})

/** What one quote showed the client. */
interface Observed {
  readonly transactionId: string
  readonly sandbox: number
  readonly hint: number | undefined
  readonly completedAt: number | undefined
  readonly failed: string | undefined
}

const observe = (events: ReadonlyArray<QuoteEvent.QuoteEvent>, sandbox: number): Observed => {
  const submitted = events.find((event) => event._tag === "Submitted")
  const terminal = events.find((event) => event._tag === "Completed" || event._tag === "Failed")
  return {
    transactionId: submitted?.transactionId ?? "",
    sandbox,
    hint: submitted?._tag === "Submitted" ? submitted.expectedCompletionTime : undefined,
    completedAt: terminal?._tag === "Completed" ? DateTime.toEpochMillis(terminal.timestamp) : undefined,
    failed: terminal?._tag === "Failed" ? terminal.error._tag : terminal === undefined ? "no terminal event" : undefined
  }
}

/** The interval between two submissions. */
const arrivalMillis = 10

/** Runs every quote with one schedule and measures GETs and delays. */
const runSchedule = (endpoints: ReadonlyArray<Endpoint>, quotes: number, schedule: PollSchedule.PollSchedule) =>
  Effect.gen(function*() {
    yield* Effect.promise(() => Promise.all(endpoints.map(Admin.reset)))
    const perSandbox = endpoints.map((endpoint, sandbox) =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const indices = Array.from({ length: quotes }, (_, index) => index).filter((index) =>
          index % endpoints.length === sandbox
        )
        return yield* Effect.forEach(indices, (index) =>
          poller.quote(cardFor(index), { schedule }).pipe(
            Stream.runCollect,
            Effect.delay(index * arrivalMillis),
            Effect.map((events) => observe(events, sandbox)),
            Effect.catch((error) =>
              Effect.succeed<Observed>({
                transactionId: "",
                sandbox,
                hint: undefined,
                completedAt: undefined,
                failed: error._tag
              })
            )
          ), { concurrency: "unbounded" })
      }).pipe(Effect.provide(pollerLayer(endpoint)))
    )
    const observed = (yield* Effect.all(perSandbox, { concurrency: "unbounded" })).flat()
    const servers = yield* Effect.promise(() =>
      Promise.all(endpoints.map(async (endpoint) => ({
        transactions: await Admin.transactions(endpoint),
        journal: await Admin.journal(endpoint)
      })))
    )
    const delays: Array<number> = []
    const gets: Array<number> = []
    const durations: Array<number> = []
    for (const quote of observed) {
      if (quote.completedAt === undefined) continue
      const server = servers[quote.sandbox]!
      const transaction = server.transactions.find((candidate) => candidate.transactionId === quote.transactionId)
      if (transaction?.completionTime === undefined) continue
      const completionTime = DateTime.toEpochMillis(transaction.completionTime)
      delays.push(quote.completedAt - completionTime)
      durations.push(completionTime - DateTime.toEpochMillis(transaction.createdTimestamp))
      gets.push(server.journal.getsByTransactionId[quote.transactionId] ?? 0)
    }
    const hints = observed.map((quote) => quote.hint).filter((hint): hint is number => hint !== undefined)
    return {
      quotes: observed.length,
      completed: delays.length,
      failures: observed.filter((quote) => quote.failed !== undefined).map((quote) => quote.failed),
      getsPerQuote: round(mean(gets), 3),
      gets: summary(gets, 0),
      delayMillis: summary(delays, 1),
      serverDurationMillis: summary(durations, 0),
      postHints: {
        min: Math.min(...hints),
        max: Math.max(...hints),
        allWholeNumbers: hints.every((hint) => Number.isInteger(hint))
      }
    }
  })

/** Runs row 3. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    const quotes = context.quick ? 40 : 200
    const sandboxes = context.quick ? 8 : 20
    const durationsMillis = Array.from(
      { length: sandboxes },
      (_, index) => Math.round(1_000 + (4_000 * index) / (sandboxes - 1))
    )
    const host = yield* SandboxProcess.scoped(durationsMillis.map((millis) => ({ timeScale: millis / derivedMillis })))
    context.log(`polling: ${quotes} quotes over ${sandboxes} sandboxes, default schedule`)
    const hinted = yield* runSchedule(host.endpoints, quotes, PollSchedule.make())
    context.log(`polling: ${quotes} quotes, fixed 1 s polling`)
    const fixed = yield* runSchedule(host.endpoints, quotes, PollSchedule.fixed("1 second"))
    const notes: Array<string> = []
    if (hinted.postHints.allWholeNumbers) {
      notes.push(
        "the sandbox sent expectedCompletionTime in whole seconds, rounded up, on every POST: the default " +
          "schedule's one wait for the hint then lands up to 1 s after completion"
      )
    }
    return {
      number: 3,
      id: "polling",
      title: "Polling",
      baseline: "the same poller with PollSchedule.fixed(\"1 second\")",
      params: {
        quotes,
        sandboxes,
        spread: "completion 1-5 s: one sandbox per duration, timeScale = duration / 2 s (derived card)",
        arrivalMillis,
        durationsMillis,
        schedules: { gcx: "PollSchedule.make() (default)", baseline: "PollSchedule.fixed(\"1 second\")" }
      },
      figures: { default: hinted, fixed },
      lines: [
        {
          measure: `GETs per quote (${quotes} quotes, completion spread over 1–5 s)`,
          gcx: fmt(hinted.getsPerQuote, 2),
          baseline: fmt(fixed.getsPerQuote, 2),
          ratio: fmt(hinted.getsPerQuote / fixed.getsPerQuote, 2),
          goal: "polling.getsPerQuote"
        },
        {
          measure: "p50 delay, server completion → Completed (ms)",
          gcx: fmt(hinted.delayMillis.p50),
          baseline: fmt(fixed.delayMillis.p50),
          ratio: fmt(hinted.delayMillis.p50 / fixed.delayMillis.p50, 2)
        },
        {
          measure: "p95 delay, server completion → Completed (ms)",
          gcx: fmt(hinted.delayMillis.p95),
          baseline: fmt(fixed.delayMillis.p95),
          ratio: fmt(hinted.delayMillis.p95 / fixed.delayMillis.p95, 2),
          goal: "polling.p95DelayMillis"
        }
      ],
      goals: [
        goal("polling.getsPerQuote", "GETs per quote, default schedule", "<=", 1.5, hinted.getsPerQuote),
        goal("polling.p95DelayMillis", "p95 completion delay (ms), default schedule", "<=", 300, hinted.delayMillis.p95)
      ],
      notes,
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
