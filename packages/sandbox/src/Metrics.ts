/**
 * The sandbox's own metrics, as Effect `Metric`s (exported by whatever metric
 * exporter the process installs, e.g. `@effect/opentelemetry`):
 *
 * - `gcx.sandbox.requests`: a counter of the requests answered, with the
 *   attributes `route` (the journal's route: `token`, `heartbeat`,
 *   `createQuote`, `getTransaction`, `admin`, `other`) and
 *   `http.response.status_code` (`none` when a fault reset the connection
 *   before any answer);
 * - `gcx.sandbox.faults`: a counter of the faults injected, with the attribute `kind`.
 *
 * Attributes are drawn from those small fixed sets only: never a requestId, a
 * transaction id, a path or card data. The counters live in the metric
 * registry of the context they are updated in (the process-wide default
 * unless one is provided), so several sandboxes in one process add up.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { FaultKind } from "./Faults.js"
import type { Route } from "./Journal.js"

const requestsName = "gcx.sandbox.requests"
const requestsDescription = "Requests answered by the gcx sandbox, by route and HTTP status"

const faultsName = "gcx.sandbox.faults"
const faultsDescription = "Faults injected by the gcx sandbox, by kind"

/** Requests answered, by route and status (without attributes: use `requestCounter` to count). */
export const requests: Metric.Counter<number> = Metric.counter(requestsName, {
  description: requestsDescription,
  incremental: true
})

/** Faults injected, by kind (without attributes: use `faultCounter` to count). */
export const faults: Metric.Counter<number> = Metric.counter(faultsName, {
  description: faultsDescription,
  incremental: true
})

/** The attribute value of a request that got no answer (its connection was reset). */
export const noStatus = "none"

// The counters with their attributes, made once per attribute set, so that each computes its series key once:
// requests are counted on the hot path.
const requestCounters = new Map<string, Metric.Counter<number>>()
const faultCounters = new Map<string, Metric.Counter<number>>()

/** The counter of requests on `route` answered with `status` (`undefined`: no answer). */
export const requestCounter = (route: Route, status: number | undefined): Metric.Counter<number> => {
  const statusLabel = status === undefined ? noStatus : String(status)
  const key = `${route} ${statusLabel}`
  let counter = requestCounters.get(key)
  if (counter === undefined) {
    counter = Metric.counter(requestsName, {
      description: requestsDescription,
      incremental: true,
      attributes: { route, "http.response.status_code": statusLabel }
    })
    requestCounters.set(key, counter)
  }
  return counter
}

/** The counter of the faults of `kind`. */
export const faultCounter = (kind: FaultKind): Metric.Counter<number> => {
  let counter = faultCounters.get(kind)
  if (counter === undefined) {
    counter = Metric.counter(faultsName, { description: faultsDescription, incremental: true, attributes: { kind } })
    faultCounters.set(kind, counter)
  }
  return counter
}

/**
 * Counts one request and the faults injected into it, synchronously, in the
 * given context (its metric registry and `Metric.CurrentMetricAttributes`):
 * for code that already runs inside the fiber of the request.
 */
export const unsafeRecord = (
  route: Route,
  status: number | undefined,
  injected: ReadonlyArray<FaultKind>,
  context: Context.Context<never>
): void => {
  requestCounter(route, status).updateUnsafe(1, context)
  for (const kind of injected) faultCounter(kind).updateUnsafe(1, context)
}

/** Counts one request and the faults injected into it. */
export const record = (
  route: Route,
  status: number | undefined,
  injected: ReadonlyArray<FaultKind>
): Effect.Effect<void> =>
  Effect.contextWith((context: Context.Context<never>) =>
    Effect.sync(() => unsafeRecord(route, status, injected, context))
  )
