/**
 * The units of gcx's metrics. Effect 4's `Metric` has no unit, and
 * `@effect/opentelemetry`'s bridge gives every metric the unit `1` (or an
 * attribute named `unit`, which would also become a label), and OpenTelemetry
 * views do not apply to it (it is a `MetricProducer`). So the bridge's metrics
 * are handed to each reader with their unit set (`withUnits`), and to the
 * Prometheus exporter (which only writes a `# UNIT` line) with the unit's
 * suffix added to the name as the OpenTelemetry convention asks
 * (`http_client_request_duration_seconds`).
 */
import * as OtelMetrics from "@effect/opentelemetry/OtelMetrics"
import type { MetricProducer, MetricReader } from "@opentelemetry/sdk-metrics"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/**
 * The units of gcx's metrics that have one, in UCUM as OpenTelemetry writes
 * them (`s`: seconds), by metric name. Every other metric has the unit `1`.
 */
export const units: Readonly<Record<string, string>> = {
  "http.client.request.duration": "s",
  "gcx.quote.duration": "s",
  "gcx.gateway.request.duration": "s"
}

/** The suffixes OpenTelemetry's Prometheus convention adds to a metric's name for its unit. */
const prometheusUnitSuffixes: Readonly<Record<string, string>> = {
  s: "seconds",
  ms: "milliseconds",
  By: "bytes",
  "%": "percent"
}

/**
 * The name a metric has in Prometheus, with the suffix of its unit as the
 * OpenTelemetry convention asks: `http.client.request.duration` in seconds is
 * scraped as `http_client_request_duration_seconds` (the exporter turns the
 * dots into underscores).
 */
export const prometheusName = (name: string, unit: string | undefined): string => {
  const suffix = unit === undefined ? undefined : prometheusUnitSuffixes[unit]
  return suffix === undefined || name.endsWith(`_${suffix}`) || name.endsWith(`.${suffix}`) ? name : `${name}_${suffix}`
}

/** Where a reader sends the metrics: Prometheus wants the unit in the name as well. */
export type Target = "otlp" | "prometheus"

/**
 * `producer` (the bridge of Effect's metrics) with the unit of each metric of
 * `units` set, and for Prometheus its name suffixed (`prometheusName`).
 */
const withUnits = (producer: MetricProducer, target: Target): MetricProducer => ({
  collect: (options) =>
    producer.collect(options).then((collected) => {
      for (const scopeMetrics of collected.resourceMetrics.scopeMetrics) {
        scopeMetrics.metrics = scopeMetrics.metrics.map((metric) => {
          const unit = units[metric.descriptor.name]
          if (unit === undefined) return metric
          const name = target === "prometheus" ? prometheusName(metric.descriptor.name, unit) : metric.descriptor.name
          return { ...metric, descriptor: { ...metric.descriptor, name, unit } }
        })
      }
      return collected
    })
})

/** Hands Effect's metrics to `reader` (with their units) until the scope closes; then shuts the reader down. */
export const registerReader = (reader: MetricReader, target: Target, shutdownTimeout: Duration.Input) =>
  Effect.flatMap(
    OtelMetrics.makeProducer(),
    (producer) => OtelMetrics.registerProducer(withUnits(producer, target), () => reader, { shutdownTimeout })
  )
