/**
 * The metrics of the exchange client, as Effect `Metric`s named after
 * OpenTelemetry's conventions (`gcx.` for gcx's own):
 *
 * | metric | kind | labels |
 * |---|---|---|
 * | `http.client.request.duration` | histogram, seconds | `gcx.operation`, `http.response.status_code` (or `error.type` when no answer came) |
 * | `gcx.retries` | counter | `operation`, `reason` |
 * | `gcx.retry_budget.exhausted` | counter | `operation` |
 * | `gcx.token.fetches` | counter | `result` |
 *
 * Labels come from small closed sets (operations, status codes, error tags):
 * never a requestId, a transaction id, a token or card data. Labelled metrics
 * are built once per label set (`labelled`) and kept, so that recording one
 * costs a map lookup and an update. Export them with `@gcx/http/Telemetry`.
 *
 * Effect 4's `Metric` has no unit. `@gcx/http/Telemetry` gives the seconds of
 * the duration histograms to OpenTelemetry (`units`), so that Prometheus
 * names carry the `_seconds` suffix of the OpenTelemetry convention.
 */
import type * as Errors from "@gcx/core/Errors"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

/** The requests the client makes: the token endpoint's and the three calls of the exchange client. */
export type Operation = "token" | "heartbeat" | "createQuote" | "getTransaction"

/** OpenTelemetry's advised buckets for `http.client.request.duration`, in seconds. */
export const requestDurationBoundaries: ReadonlyArray<number> = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.075,
  0.1,
  0.25,
  0.5,
  0.75,
  1,
  2.5,
  5,
  7.5,
  10
]

/**
 * A metric family: the same metric (name, kind, description, buckets) for any
 * set of attributes. Effect 4 has no metric keys: a metric is built with its
 * attributes (`Metric.counter(name, { attributes })`).
 */
export type Family<M> = (attributes: Metric.Metric.AttributeSet) => M

/**
 * The metric of `family` with `labels` as its attributes, for a label set
 * known in advance. `Metric.withAttributes` adds its attributes to the
 * context on every update, which makes Effect merge them and build the
 * series' key again each time; this metric carries them from the start, so
 * an update costs one registry lookup. Build one per label set and keep it
 * (`memoize`).
 */
export const labelled = <M>(family: Family<M>, labels: Metric.Metric.AttributeSet): M => family(labels)

/** Builds each labelled metric once per label set. */
export const memoize = <M>(make: (key: string) => M): (key: string) => M => {
  const cache = new Map<string, M>()
  return (key) => {
    let metric = cache.get(key)
    if (metric === undefined) {
      metric = make(key)
      cache.set(key, metric)
    }
    return metric
  }
}

/** The family of `http.client.request.duration`. */
export const requestDurationFamily: Family<Metric.Histogram<number>> = (attributes) =>
  Metric.histogram("http.client.request.duration", {
    description: "Duration of the HTTP requests of gcx, in seconds",
    boundaries: requestDurationBoundaries,
    attributes
  })

/** How long each HTTP request took, from sending it to its answer (or its failure), in seconds. */
export const requestDuration: Metric.Histogram<number> = requestDurationFamily({})

/** The family of `gcx.retries`. */
export const retriesFamily: Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.retries", {
    description: "Retries of the exchange client's calls",
    incremental: true,
    attributes
  })

/** Retries of the exchange client, by operation and by the failure retried (an error tag). */
export const retries: Metric.Counter<number> = retriesFamily({})

/** The family of `gcx.retry_budget.exhausted`. */
export const retryBudgetExhaustedFamily: Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.retry_budget.exhausted", {
    description: "Retries refused by the empty retry budget",
    incremental: true,
    attributes
  })

/** Retries refused because the client-wide retry budget was empty. */
export const retryBudgetExhausted: Metric.Counter<number> = retryBudgetExhaustedFamily({})

/** The family of `gcx.token.fetches`. */
export const tokenFetchesFamily: Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.token.fetches", {
    description: "Requests to the token endpoint",
    incremental: true,
    attributes
  })

/** Requests to the token endpoint, by result: `success`, `refused` (an error status), `unreadable` or `no_answer`. */
export const tokenFetches: Metric.Counter<number> = tokenFetchesFamily({})

/**
 * `Metric.update` in one step: the metric attributes of the fiber
 * (`Metric.CurrentMetricAttributes`) are read where the update runs.
 */
export const update = <In>(metric: Metric.Metric<In, unknown>, input: In): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    metric.updateUnsafe(input, fiber.context)
    return Effect.void
  })

const durationByKey = memoize((key) => {
  const [operation, label, value] = key.split(" ") as [string, string, string]
  return labelled(requestDurationFamily, { "gcx.operation": operation, [label]: value })
})

const retriesByKey = memoize((key) => {
  const [operation, reason] = key.split(" ") as [string, string]
  return labelled(retriesFamily, { operation, reason })
})

const exhaustedByOperation = memoize((operation) => labelled(retryBudgetExhaustedFamily, { operation }))

const tokenFetchesByResult = memoize((result) => labelled(tokenFetchesFamily, { result }))

/**
 * Records one HTTP request: `millis` it took, with the status it was answered
 * with, or the transport failure's reason (`error.type`) when none came.
 */
export const recordRequest = (
  operation: Operation,
  millis: number,
  outcome: { readonly status: number } | { readonly errorType: string }
): Effect.Effect<void> =>
  update(
    durationByKey(
      "status" in outcome
        ? `${operation} http.response.status_code ${outcome.status}`
        : `${operation} error.type ${outcome.errorType}`
    ),
    millis / 1000
  )

/**
 * Times a request on the `Clock` into `http.client.request.duration`: its
 * answer's status (also when the answer was refused, e.g. a redirect or a body
 * past the size cap), or the reason of the `TransportError` it failed with.
 */
export const timeRequest =
  (operation: Operation) =>
  <A extends { readonly status: number }, E extends Errors.TransportError | Errors.UnexpectedResponse, R>(
    self: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> =>
    Effect.clockWith((clock) => {
      const startedAt = clock.currentTimeMillisUnsafe()
      const elapsed = () => clock.currentTimeMillisUnsafe() - startedAt
      return self.pipe(
        Effect.tap((answer) => recordRequest(operation, elapsed(), { status: answer.status })),
        Effect.tapError((error) =>
          recordRequest(
            operation,
            elapsed(),
            error._tag === "TransportError"
              ? { errorType: error.reason }
              : error.httpStatus !== undefined
              ? { status: error.httpStatus }
              : { errorType: error._tag }
          )
        )
      )
    })

/** The `reason` label of a retry: the error's tag, with a transport failure's reason. */
export const retryReason = (error: { readonly _tag: string; readonly reason?: unknown }): string =>
  error._tag === "TransportError" && typeof error.reason === "string" ? `TransportError.${error.reason}` : error._tag

/** Counts a retry of `operation` after `error`. */
export const recordRetry = (
  operation: string,
  error: { readonly _tag: string; readonly reason?: unknown }
): Effect.Effect<void> => update(retriesByKey(`${operation} ${retryReason(error)}`), 1)

/** Counts a retry refused by the empty budget. */
export const recordBudgetExhausted = (operation: string): Effect.Effect<void> =>
  update(exhaustedByOperation(operation), 1)

/** The `result` label of a token request: `success`, or how it failed. */
export const tokenResult = (error: Errors.TokenError | undefined): string =>
  error === undefined
    ? "success"
    : error.httpStatus === undefined
    ? "no_answer"
    : error.httpStatus < 200 || error.httpStatus >= 300
    ? "refused"
    : "unreadable"

/** Counts a token request by its result. */
export const recordTokenFetch = (error: Errors.TokenError | undefined): Effect.Effect<void> =>
  update(tokenFetchesByResult(tokenResult(error)), 1)
