/**
 * The metrics of the poller, as Effect `Metric`s named after OpenTelemetry's
 * conventions:
 *
 * | metric | kind | labels |
 * |---|---|---|
 * | `gcx.quotes.submitted` | counter | |
 * | `gcx.quotes.outcomes` | counter | `outcome`: `Completed`, the error's tag, or `Interrupted` |
 * | `gcx.quote.duration` | histogram, seconds | `outcome` |
 * | `gcx.quotes.in_flight` | gauge | |
 * | `gcx.polls` | counter | |
 *
 * A quote is counted by `quote` and `getQuote` (and so `quoteAll`) from the
 * moment it is submitted to its outcome, which is its terminal event, the
 * refusal of its POST (a transaction never existed), or `Interrupted` when its
 * caller stopped before either. So `submitted` is the sum of the outcomes
 * plus `in_flight`. Transactions resumed with `track` are polled (`gcx.polls`)
 * but were submitted elsewhere. Labels never carry card data, requestIds or
 * transaction ids.
 */
import type { Errors, QuoteEvent } from "@gcx/core"
import { Metrics as HttpMetrics } from "@gcx/http"
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import type * as MetricLabel from "effect/MetricLabel"
import * as Stream from "effect/Stream"

/** Quotes submitted. */
export const quotesSubmitted = Metric.counter("gcx.quotes.submitted", {
  description: "Quotes submitted",
  incremental: true
})

const quoteOutcomesKey = MetricKey.counter("gcx.quotes.outcomes", {
  description: "Quotes ended, by outcome",
  incremental: true
})

/** Quotes ended, by outcome: `Completed`, the tag of the error they ended with, or `Interrupted`. */
export const quoteOutcomes = Metric.fromMetricKey(quoteOutcomesKey)

/** Buckets of `gcx.quote.duration`, in seconds: a quote takes from an instant to the two-minute deadline. */
export const quoteDurationBoundaries: ReadonlyArray<number> = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120]

const quoteDurationKey = MetricKey.histogram(
  "gcx.quote.duration",
  MetricBoundaries.fromIterable(quoteDurationBoundaries),
  "Time from a quote's submission to its outcome, in seconds"
)

/** Time from a quote's submission to its outcome, in seconds. */
export const quoteDuration = Metric.fromMetricKey(quoteDurationKey)

/** Quotes submitted and not ended yet. */
export const quotesInFlight = Metric.gauge("gcx.quotes.in_flight", { description: "Quotes submitted and not ended" })

/** GETs of transactions made by the poller (each counted once, whatever its retries). */
export const polls = Metric.counter("gcx.polls", { description: "Polls of transactions", incremental: true })

/** The outcome's counter and histogram, built once per outcome. */
const metricsOf = HttpMetrics.memoize((outcome) =>
  [
    HttpMetrics.labelled(quoteOutcomesKey, { outcome }),
    HttpMetrics.labelled(quoteDurationKey, { outcome })
  ] as const
)

/** The `outcome` label of a terminal event: `Completed` or the error's tag. */
export const outcomeOf = (terminal: QuoteEvent.Terminal): string =>
  terminal._tag === "Completed" ? "Completed" : terminal.error._tag

/** Counts one poll. */
export const recordPoll: Effect.Effect<void> = HttpMetrics.update(polls, 1)

/** One quote being measured: `end` records its outcome once; later calls do nothing. */
interface Meter {
  readonly end: (outcome: string) => void
}

/**
 * Counts a quote as submitted and in flight, and returns how to end it. The
 * updates are made in place, with the metric labels of the fiber that starts
 * the quote: a quote costs no Effect per metric.
 */
const startNow = (clock: Clock.Clock, labels: ReadonlyArray<MetricLabel.MetricLabel>): Meter => {
  const startedAt = clock.unsafeCurrentTimeMillis()
  let ended = false
  quotesSubmitted.unsafeUpdate(1, labels)
  quotesInFlight.unsafeModify(1, labels)
  return {
    end: (outcome) => {
      if (ended) return
      ended = true
      const [count, duration] = metricsOf(outcome)
      count.unsafeUpdate(1, labels)
      duration.unsafeUpdate((clock.unsafeCurrentTimeMillis() - startedAt) / 1000, labels)
      quotesInFlight.unsafeModify(-1, labels)
    }
  }
}

const start: Effect.Effect<Meter> = Effect.clockWith((clock) =>
  Effect.withFiberRuntime((fiber) => Effect.succeed(startNow(clock, fiber.getFiberRef(FiberRef.currentMetricLabels))))
)

const endOnExit = (meter: Meter, exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  Effect.sync(() =>
    meter.end(
      Exit.isSuccess(exit)
        ? "Completed"
        : exit.cause._tag === "Fail"
        ? exit.cause.error._tag
        : "Interrupted"
    )
  )

/** Measures a quote run as one effect (`getQuote`): it ends `Completed`, with its error's tag, or `Interrupted`. */
export const meterQuote = <A, E extends Errors.QuoteFailure, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => Effect.flatMap(start, (meter) => Effect.onExit(self, (exit) => endOnExit(meter, exit)))

/**
 * Measures a quote run as a stream of its events (`quote`): it ends at its
 * terminal event, with the refusal of its POST (the stream's failure), or
 * `Interrupted` when the stream is closed before either.
 */
export const meterQuoteStream = <E extends Errors.QuoteFailure, R>(
  self: Stream.Stream<QuoteEvent.QuoteEvent, E, R>,
  isTerminal: (event: QuoteEvent.QuoteEvent) => event is QuoteEvent.Terminal
): Stream.Stream<QuoteEvent.QuoteEvent, E, R> =>
  Stream.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(start, (meter) => Effect.sync(() => meter.end("Interrupted"))),
      (meter) =>
        self.pipe(
          Stream.tap((event) => isTerminal(event) ? Effect.sync(() => meter.end(outcomeOf(event))) : Effect.void),
          Stream.tapError((error) => Effect.sync(() => meter.end(error._tag)))
        )
    )
  )
