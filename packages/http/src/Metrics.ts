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
 * never a requestId, a transaction id, a token or card data. Tagged metrics
 * are built once per label set and kept, so that recording one costs a map
 * lookup and an update. Export them with `@gcx/http/Telemetry`.
 */
import type * as Errors from "@gcx/core/Errors"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"

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

/** How long each HTTP request took, from sending it to its answer (or its failure), in seconds. */
export const requestDuration = Metric.histogram(
  "http.client.request.duration",
  MetricBoundaries.fromIterable(requestDurationBoundaries),
  "Duration of the HTTP requests of gcx, in seconds"
)

/** Retries of the exchange client, by operation and by the failure retried (an error tag). */
export const retries = Metric.counter("gcx.retries", {
  description: "Retries of the exchange client's calls",
  incremental: true
})

/** Retries refused because the client-wide retry budget was empty. */
export const retryBudgetExhausted = Metric.counter("gcx.retry_budget.exhausted", {
  description: "Retries refused by the empty retry budget",
  incremental: true
})

/** Requests to the token endpoint, by result: `success`, `refused` (an error status), `unreadable` or `no_answer`. */
export const tokenFetches = Metric.counter("gcx.token.fetches", {
  description: "Requests to the token endpoint",
  incremental: true
})

/** Builds each tagged metric once per label set. */
const memoize = <M>(make: (key: string) => M): (key: string) => M => {
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

const durationByKey = memoize((key) => {
  const [operation, label, value] = key.split(" ") as [string, string, string]
  return requestDuration.pipe(
    Metric.tagged("gcx.operation", operation),
    Metric.tagged(label, value)
  )
})

const retriesByKey = memoize((key) => {
  const [operation, reason] = key.split(" ") as [string, string]
  return retries.pipe(Metric.tagged("operation", operation), Metric.tagged("reason", reason))
})

const exhaustedByOperation = memoize((operation) => Metric.tagged(retryBudgetExhausted, "operation", operation))

const tokenFetchesByResult = memoize((result) => Metric.tagged(tokenFetches, "result", result))

/**
 * Records one HTTP request: `millis` it took, with the status it was answered
 * with, or the transport failure's reason (`error.type`) when none came.
 */
export const recordRequest = (
  operation: Operation,
  millis: number,
  outcome: { readonly status: number } | { readonly errorType: string }
): Effect.Effect<void> =>
  Metric.update(
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
      const startedAt = clock.unsafeCurrentTimeMillis()
      return self.pipe(
        Effect.tapBoth({
          onSuccess: (answer) =>
            recordRequest(operation, clock.unsafeCurrentTimeMillis() - startedAt, { status: answer.status }),
          onFailure: (error) =>
            recordRequest(
              operation,
              clock.unsafeCurrentTimeMillis() - startedAt,
              error._tag === "TransportError"
                ? { errorType: error.reason }
                : error.httpStatus !== undefined
                ? { status: error.httpStatus }
                : { errorType: error._tag }
            )
        })
      )
    })

/** The `reason` label of a retry: the error's tag, with a transport failure's reason. */
export const retryReason = (error: { readonly _tag: string; readonly reason?: unknown }): string =>
  error._tag === "TransportError" && typeof error.reason === "string" ? `TransportError.${error.reason}` : error._tag

/** Counts a retry of `operation` after `error`. */
export const recordRetry = (
  operation: string,
  error: { readonly _tag: string; readonly reason?: unknown }
): Effect.Effect<void> => Metric.increment(retriesByKey(`${operation} ${retryReason(error)}`))

/** Counts a retry refused by the empty budget. */
export const recordBudgetExhausted = (operation: string): Effect.Effect<void> =>
  Metric.increment(exhaustedByOperation(operation))

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
  Metric.increment(tokenFetchesByResult(tokenResult(error)))
