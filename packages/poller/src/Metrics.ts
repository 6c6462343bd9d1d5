/**
 * The metrics of the poller, as Effect `Metric`s named after OpenTelemetry's
 * conventions:
 *
 * | metric | kind | attributes |
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
 * but were submitted elsewhere. Attributes never carry card data, requestIds
 * or transaction ids.
 */
import type { Errors, QuoteEvent } from "@gcx/core"
import { Metrics as HttpMetrics } from "@gcx/http"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Stream from "effect/Stream"

/** Quotes submitted. */
export const quotesSubmitted: Metric.Counter<number> = Metric.counter("gcx.quotes.submitted", {
  description: "Quotes submitted",
  incremental: true
})

/** `gcx.quotes.outcomes` for an attribute set. */
export const quoteOutcomesFamily: HttpMetrics.Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.quotes.outcomes", { description: "Quotes ended, by outcome", incremental: true, attributes })

/** Quotes ended, by outcome: `Completed`, the tag of the error they ended with, or `Interrupted`. */
export const quoteOutcomes: Metric.Counter<number> = quoteOutcomesFamily({})

/** Buckets of `gcx.quote.duration`, in seconds: a quote takes from an instant to the two-minute deadline. */
export const quoteDurationBoundaries: ReadonlyArray<number> = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120]

/** `gcx.quote.duration` for an attribute set. */
export const quoteDurationFamily: HttpMetrics.Family<Metric.Histogram<number>> = (attributes) =>
  Metric.histogram("gcx.quote.duration", {
    description: "Time from a quote's submission to its outcome, in seconds",
    boundaries: quoteDurationBoundaries,
    attributes
  })

/** Time from a quote's submission to its outcome, in seconds. */
export const quoteDuration: Metric.Histogram<number> = quoteDurationFamily({})

/** Quotes submitted and not ended yet. */
export const quotesInFlight: Metric.Gauge<number> = Metric.gauge("gcx.quotes.in_flight", {
  description: "Quotes submitted and not ended"
})

/** GETs of transactions made by the poller (each counted once, whatever its retries). */
export const polls: Metric.Counter<number> = Metric.counter("gcx.polls", {
  description: "Polls of transactions",
  incremental: true
})

/**
 * The outcome's counter and histogram, built once per outcome with the
 * attribute in the metric itself (`Metric.withAttributes` would rebuild the
 * series key on every update).
 */
const metricsOf = HttpMetrics.memoize((outcome) =>
  [
    HttpMetrics.labelled(quoteOutcomesFamily, { outcome }),
    HttpMetrics.labelled(quoteDurationFamily, { outcome })
  ] as const
)

/** The `outcome` attribute of a terminal event: `Completed` or the error's tag. */
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
 * updates are made in place, in the context of the fiber that starts the
 * quote (its metric attributes and registry): a quote costs no Effect per
 * metric.
 */
const startNow = (clock: Clock.Clock, context: Context.Context<never>): Meter => {
  const startedAt = clock.currentTimeMillisUnsafe()
  let ended = false
  quotesSubmitted.updateUnsafe(1, context)
  quotesInFlight.modifyUnsafe(1, context)
  return {
    end: (outcome) => {
      if (ended) return
      ended = true
      const [count, duration] = metricsOf(outcome)
      count.updateUnsafe(1, context)
      duration.updateUnsafe((clock.currentTimeMillisUnsafe() - startedAt) / 1000, context)
      quotesInFlight.modifyUnsafe(-1, context)
    }
  }
}

const start: Effect.Effect<Meter> = Effect.withFiber((fiber) =>
  Effect.succeed(startNow(fiber.getRef(Clock.Clock), fiber.context))
)

const endOnExit = (meter: Meter, exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  Effect.sync(() => {
    if (Exit.isSuccess(exit)) return meter.end("Completed")
    const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    meter.end(error !== undefined && error._tag === "Fail" ? error.error._tag : "Interrupted")
  })

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
  Stream.unwrap(
    Effect.map(
      Effect.acquireRelease(start, (meter) => Effect.sync(() => meter.end("Interrupted"))),
      (meter) =>
        self.pipe(
          Stream.tap((event) => isTerminal(event) ? Effect.sync(() => meter.end(outcomeOf(event))) : Effect.void),
          Stream.tapError((error) => Effect.sync(() => meter.end(error._tag)))
        )
    )
  )
