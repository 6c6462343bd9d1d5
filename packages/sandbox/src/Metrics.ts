/**
 * The sandbox's own metrics, as Effect `Metric`s (exported by whatever metric
 * exporter the process installs, e.g. `@effect/opentelemetry`):
 *
 * - `gcx.sandbox.requests`: a counter of the requests answered, labelled
 *   `route` (the journal's route: `token`, `heartbeat`, `createQuote`,
 *   `getTransaction`, `admin`, `other`) and `http.response.status_code`
 *   (`none` when a fault reset the connection before any answer);
 * - `gcx.sandbox.faults`: a counter of the faults injected, labelled `kind`.
 *
 * Labels are drawn from those small fixed sets only: never a requestId, a
 * transaction id, a path or card data. The counters live in Effect's global
 * metric registry, so several sandboxes in one process add up.
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as MetricKey from "effect/MetricKey"
import type * as MetricLabel from "effect/MetricLabel"
import type { FaultKind } from "./Faults.js"
import type { Route } from "./Journal.js"

const requestsKey = MetricKey.counter("gcx.sandbox.requests", {
  description: "Requests answered by the gcx sandbox, by route and HTTP status",
  incremental: true
})

const faultsKey = MetricKey.counter("gcx.sandbox.faults", {
  description: "Faults injected by the gcx sandbox, by kind",
  incremental: true
})

/** Requests answered, by route and status (untagged: use `requestCounter` to count). */
export const requests: Metric.Metric.Counter<number> = Metric.fromMetricKey(requestsKey)

/** Faults injected, by kind (untagged: use `faultCounter` to count). */
export const faults: Metric.Metric.Counter<number> = Metric.fromMetricKey(faultsKey)

/** The label value of a request that got no answer (its connection was reset). */
export const noStatus = "none"

// The tagged counters, made once per label set from tagged keys, so that each resolves its registry entry
// once (a `Metric.tagged` counter builds a new key on every update): requests are counted on the hot path.
const requestCounters = new Map<string, Metric.Metric.Counter<number>>()
const faultCounters = new Map<string, Metric.Metric.Counter<number>>()

/** The counter of requests on `route` answered with `status` (`undefined`: no answer). */
export const requestCounter = (route: Route, status: number | undefined): Metric.Metric.Counter<number> => {
  const statusLabel = status === undefined ? noStatus : String(status)
  const key = `${route} ${statusLabel}`
  let counter = requestCounters.get(key)
  if (counter === undefined) {
    counter = Metric.fromMetricKey(
      requestsKey.pipe(MetricKey.tagged("route", route), MetricKey.tagged("http.response.status_code", statusLabel))
    )
    requestCounters.set(key, counter)
  }
  return counter
}

/** The counter of the faults of `kind`. */
export const faultCounter = (kind: FaultKind): Metric.Metric.Counter<number> => {
  let counter = faultCounters.get(kind)
  if (counter === undefined) {
    counter = Metric.fromMetricKey(faultsKey.pipe(MetricKey.tagged("kind", kind)))
    faultCounters.set(kind, counter)
  }
  return counter
}

/**
 * Counts one request and the faults injected into it, synchronously, with the
 * caller's metric labels (`FiberRef.currentMetricLabels`): for code that
 * already runs inside the fiber of the request.
 */
export const unsafeRecord = (
  route: Route,
  status: number | undefined,
  injected: ReadonlyArray<FaultKind>,
  labels: ReadonlyArray<MetricLabel.MetricLabel>
): void => {
  requestCounter(route, status).unsafeUpdate(1, labels)
  for (const kind of injected) faultCounter(kind).unsafeUpdate(1, labels)
}

/** Counts one request and the faults injected into it. */
export const record = (
  route: Route,
  status: number | undefined,
  injected: ReadonlyArray<FaultKind>
): Effect.Effect<void> =>
  FiberRef.getWith(
    FiberRef.currentMetricLabels,
    (labels) => Effect.sync(() => unsafeRecord(route, status, injected, labels))
  )
