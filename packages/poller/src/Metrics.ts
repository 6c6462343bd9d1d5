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
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as Stream from "effect/Stream"

/** Quotes submitted. */
export const quotesSubmitted = Metric.counter("gcx.quotes.submitted", {
  description: "Quotes submitted",
  incremental: true
})

/** Quotes ended, by outcome: `Completed`, the tag of the error they ended with, or `Interrupted`. */
export const quoteOutcomes = Metric.counter("gcx.quotes.outcomes", {
  description: "Quotes ended, by outcome",
  incremental: true
})

/** Buckets of `gcx.quote.duration`, in seconds: a quote takes from an instant to the two-minute deadline. */
export const quoteDurationBoundaries: ReadonlyArray<number> = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120]

/** Time from a quote's submission to its outcome, in seconds. */
export const quoteDuration = Metric.histogram(
  "gcx.quote.duration",
  MetricBoundaries.fromIterable(quoteDurationBoundaries),
  "Time from a quote's submission to its outcome, in seconds"
)

/** Quotes submitted and not ended yet. */
export const quotesInFlight = Metric.gauge("gcx.quotes.in_flight", { description: "Quotes submitted and not ended" })

/** GETs of transactions made by the poller (each counted once, whatever its retries). */
export const polls = Metric.counter("gcx.polls", { description: "Polls of transactions", incremental: true })

const byOutcome = new Map<string, readonly [typeof quoteOutcomes, typeof quoteDuration]>()

/** The outcome's counter and histogram, built once per outcome. */
const metricsOf = (outcome: string) => {
  let metrics = byOutcome.get(outcome)
  if (metrics === undefined) {
    metrics = [Metric.tagged(quoteOutcomes, "outcome", outcome), Metric.tagged(quoteDuration, "outcome", outcome)]
    byOutcome.set(outcome, metrics)
  }
  return metrics
}

/** The `outcome` label of a terminal event: `Completed` or the error's tag. */
export const outcomeOf = (terminal: QuoteEvent.Terminal): string =>
  terminal._tag === "Completed" ? "Completed" : terminal.error._tag

/** Counts one poll. */
export const recordPoll: Effect.Effect<void> = Metric.increment(polls)

/** One quote being measured: `end` records its outcome once; later calls do nothing. */
interface Meter {
  readonly end: (outcome: string) => Effect.Effect<void>
}

/** Counts a quote as submitted and in flight, and returns how to end it. */
const start: Effect.Effect<Meter> = Effect.clockWith((clock) => {
  const startedAt = clock.unsafeCurrentTimeMillis()
  let ended = false
  const meter: Meter = {
    end: (outcome) =>
      Effect.suspend(() => {
        if (ended) return Effect.void
        ended = true
        const [count, duration] = metricsOf(outcome)
        return Effect.all([
          Metric.increment(count),
          Metric.update(duration, (clock.unsafeCurrentTimeMillis() - startedAt) / 1000),
          Metric.incrementBy(quotesInFlight, -1)
        ], { discard: true })
      })
  }
  return Effect.as(Effect.zipRight(Metric.increment(quotesSubmitted), Metric.increment(quotesInFlight)), meter)
})

const endOnExit = (meter: Meter, exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  meter.end(
    Exit.isSuccess(exit)
      ? "Completed"
      : exit.cause._tag === "Fail"
      ? exit.cause.error._tag
      : "Interrupted"
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
      Effect.acquireRelease(start, (meter) => meter.end("Interrupted")),
      (meter) =>
        self.pipe(
          Stream.tap((event) => isTerminal(event) ? meter.end(outcomeOf(event)) : Effect.void),
          Stream.tapError((error) => meter.end(error._tag))
        )
    )
  )
