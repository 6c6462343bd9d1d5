/**
 * Exports gcx's spans and metrics with OpenTelemetry: `@effect/opentelemetry`'s
 * `NodeSdk`, with OTLP/HTTP exporters (JSON) for traces and metrics, and
 * optionally a Prometheus scrape endpoint. Imported as `@gcx/http/Telemetry`,
 * apart from `@gcx/http`, so that an application without the OpenTelemetry
 * packages can use the client.
 *
 * - `layerConfig` reads the standard variables: `OTEL_EXPORTER_OTLP_ENDPOINT`
 *   (the collector's base address; traces go to `/v1/traces`, metrics to
 *   `/v1/metrics`; unset: no OTLP export), `OTEL_SERVICE_NAME` (default
 *   `gcx`), `OTEL_RESOURCE_ATTRIBUTES` (`key=value,...`) and
 *   `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds, default 10,000).
 * - A collector that is down or slow never slows or fails a quote: exports run
 *   in the background with a timeout; a failed export is dropped, counted in
 *   `gcx.telemetry.exports.failed{signal}`, and logged once per signal.
 * - Spans and metrics are flushed when the layer's scope closes (bounded by
 *   `shutdownTimeout`), so a command exports everything before it exits. A
 *   flush that fails or gives up is logged (once per signal, with the other
 *   failures), never a failure of the layer's release.
 * - Effect's OpenTelemetry tracer makes the current span OpenTelemetry's
 *   active context around every run of a fiber, for libraries instrumented
 *   with OpenTelemetry. That only has an effect when a context manager is
 *   registered (`NodeSdk` registers none); without one it is skipped, which
 *   saves a context object and a few calls per fiber run (`skipUselessContext`).
 * - Effect 4's `Metric` has no unit, and `@effect/opentelemetry`'s bridge gives
 *   every metric the unit `1` (or an attribute named `unit`, which would also
 *   become a label), and OpenTelemetry views do not apply to it (it is a
 *   `MetricProducer`). So the units are given here (`units`): the bridge's
 *   metrics are handed to each reader with their unit set, and to the
 *   Prometheus exporter (which only writes a `# UNIT` line) with the unit's
 *   suffix added to the name as the OpenTelemetry convention asks
 *   (`http_client_request_duration_seconds`).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import type * as Resource from "@effect/opentelemetry/Resource"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as ExportFailures from "./internal/telemetry/exportFailures.js"
import { settleFlushes } from "./internal/telemetry/flushes.js"
import { PrometheusEndpoint, servePrometheus } from "./internal/telemetry/prometheus.js"
import { tracing } from "./internal/telemetry/tracer.js"
import { registerReader } from "./internal/telemetry/units.js"

export {
  /** Exports that failed (the collector was down, slow or refused them): their data is dropped. */
  exportsFailed,
  /** The family of `gcx.telemetry.exports.failed`. */
  exportsFailedFamily,
  /** The signals exported. */
  type Signal
} from "./internal/telemetry/exportFailures.js"
export {
  /** The address of the Prometheus scrape endpoint, when one is served. */
  PrometheusEndpoint
} from "./internal/telemetry/prometheus.js"
export {
  /** Whether an OpenTelemetry context manager is registered: without one, `context.with` does nothing. */
  hasContextManager,
  /** Effect's OpenTelemetry tracer over the context's `OtelTracer`, made with `skipUselessContext`. */
  layerTracer,
  /**
   * `tracer` (Effect's OpenTelemetry tracer), whose work around every fiber run
   * (making the current span OpenTelemetry's active context) is skipped while no
   * OpenTelemetry context manager is registered, as it changes nothing then.
   * Whether one is registered is checked again at each new span, so that a
   * manager registered later is honoured from the next span on.
   */
  skipUselessContext
} from "./internal/telemetry/tracer.js"
export {
  /**
   * The name a metric has in Prometheus, with the suffix of its unit as the
   * OpenTelemetry convention asks: `http.client.request.duration` in seconds is
   * scraped as `http_client_request_duration_seconds` (the exporter turns the
   * dots into underscores).
   */
  prometheusName,
  /**
   * The units of gcx's metrics that have one, in UCUM as OpenTelemetry writes
   * them (`s`: seconds), by metric name. Every other metric has the unit `1`.
   */
  units
} from "./internal/telemetry/units.js"

/** Where and how to export. */
export interface Options {
  /** The OTLP/HTTP collector's base address (`http://127.0.0.1:4318`); none: no OTLP export. */
  readonly endpoint?: string | undefined
  /** `service.name` of the resource. Default `gcx`. */
  readonly serviceName?: string | undefined
  /** More resource attributes (`OTEL_RESOURCE_ATTRIBUTES` is read as well). */
  readonly resourceAttributes?: Record<string, string> | undefined
  /** How often metrics are pushed to the collector. Default 10 seconds. */
  readonly metricExportInterval?: Duration.Input | undefined
  /** How long one export may take before it is dropped. Default 5 seconds. */
  readonly exportTimeout?: Duration.Input | undefined
  /** How long the final flush may take when the scope closes. Default 3 seconds. */
  readonly shutdownTimeout?: Duration.Input | undefined
  /** Serve the metrics as Prometheus text at `/metrics` on this port (0: any free port). */
  readonly prometheus?: { readonly port: number; readonly host?: string | undefined } | undefined
}

/**
 * The OpenTelemetry SDK wired as `options` say: Effect's tracer and metrics
 * exported over OTLP/HTTP JSON, and a Prometheus endpoint if asked for. With
 * neither, nothing is exported (the resource is still provided).
 */
export const layer = (options: Options): Layer.Layer<Resource.Resource | PrometheusEndpoint> =>
  Layer.unwrap(Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const timeoutMillis = Duration.toMillis(options.exportTimeout ?? "5 seconds")
    const shutdownTimeout = options.shutdownTimeout ?? "3 seconds"
    const shutdownMillis = Duration.toMillis(shutdownTimeout)
    const base = options.endpoint?.replace(/\/+$/, "")
    const metricFailures = ExportFailures.make("metrics", context)
    const readers: Array<Effect.Effect<unknown, never, Resource.Resource | Scope.Scope>> = []
    let spanProcessor: BatchSpanProcessor | undefined
    if (base !== undefined) {
      const traceFailures = ExportFailures.make("traces", context)
      const traces = ExportFailures.guard(
        new OTLPTraceExporter({ url: `${base}/v1/traces`, timeoutMillis }),
        traceFailures
      )
      spanProcessor = settleFlushes(
        new BatchSpanProcessor(traces, { exportTimeoutMillis: timeoutMillis }),
        traceFailures,
        shutdownMillis
      )
      const metrics = ExportFailures.guard(
        new OTLPMetricExporter({ url: `${base}/v1/metrics`, timeoutMillis }),
        metricFailures
      )
      const intervalMillis = Duration.toMillis(options.metricExportInterval ?? "10 seconds")
      const reader = new PeriodicExportingMetricReader({
        exporter: metrics,
        exportIntervalMillis: intervalMillis,
        // the reader requires an export to end before the next one is due
        exportTimeoutMillis: Math.min(timeoutMillis, intervalMillis)
      })
      readers.push(registerReader(settleFlushes(reader, metricFailures, shutdownMillis), "otlp", shutdownTimeout))
    }
    let endpoint = Layer.succeed(PrometheusEndpoint, { url: Option.none() })
    if (options.prometheus !== undefined) {
      const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true })
      readers.push(
        registerReader(settleFlushes(exporter, metricFailures, shutdownMillis), "prometheus", shutdownTimeout)
      )
      const url = yield* servePrometheus(exporter, options.prometheus.port, options.prometheus.host ?? "127.0.0.1")
      endpoint = Layer.succeed(PrometheusEndpoint, { url: Option.some(url) })
    }
    // The SDK's resource; its tracer and its metric readers are set up here, over the same resource.
    const sdk = NodeSdk.layer(() => ({
      resource: { serviceName: options.serviceName ?? "gcx", attributes: options.resourceAttributes ?? {} },
      shutdownTimeout
    }))
    const metered = readers.length === 0
      ? sdk
      : Layer.provideMerge(Layer.effectDiscard(Effect.all(readers, { discard: true })), sdk)
    const traced = spanProcessor === undefined
      ? metered
      : Layer.provideMerge(tracing(spanProcessor, shutdownTimeout), metered)
    return Layer.merge(traced, endpoint)
  }))

/**
 * The standard OpenTelemetry variables: `OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` (read by the SDK) and
 * `OTEL_METRIC_EXPORT_INTERVAL`. `prometheus` adds a scrape endpoint.
 */
export const config: Config.Config<Options> = Config.all({
  endpoint: Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT")),
  serviceName: Config.withDefault(Config.String("OTEL_SERVICE_NAME"), "gcx"),
  metricExportInterval: Config.option(Config.Int("OTEL_METRIC_EXPORT_INTERVAL"))
}).pipe(Config.map(({ endpoint, metricExportInterval, serviceName }) => ({
  endpoint: Option.getOrUndefined(Option.filter(endpoint, (endpoint) => endpoint.trim() !== "")),
  serviceName,
  metricExportInterval: Option.getOrUndefined(Option.map(metricExportInterval, Duration.millis))
})))

/** `layer` configured by the `OTEL_*` variables, plus `extra` (e.g. `{ prometheus: { port: 9464 } }`). */
export const layerConfig = (
  extra: Partial<Options> = {}
): Layer.Layer<Resource.Resource | PrometheusEndpoint, Config.ConfigError> =>
  Layer.unwrap(Effect.map(config, (options) => layer({ ...options, ...extra })))
