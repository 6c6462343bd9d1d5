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
 *   `shutdownTimeout`), so a command exports everything before it exits.
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
import * as OtelMetrics from "@effect/opentelemetry/OtelMetrics"
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import type * as Resource from "@effect/opentelemetry/Resource"
import * as OtelApi from "@opentelemetry/api"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import type { MetricProducer, MetricReader } from "@opentelemetry/sdk-metrics"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Metrics from "./Metrics.js"

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

/** The signals exported. */
export type Signal = "traces" | "metrics"

/** The family of `gcx.telemetry.exports.failed`. */
export const exportsFailedFamily: Metrics.Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.telemetry.exports.failed", {
    description: "OTLP exports that failed; their data was dropped",
    incremental: true,
    attributes
  })

/** Exports that failed (the collector was down, slow or refused them): their data is dropped. */
export const exportsFailed: Metric.Counter<number> = exportsFailedFamily({})

/**
 * The units of gcx's metrics that have one, in UCUM as OpenTelemetry writes
 * them (`s`: seconds), by metric name. Every other metric has the unit `1`.
 */
export const units: Readonly<Record<string, string>> = {
  "http.client.request.duration": "s",
  "gcx.quote.duration": "s"
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

/**
 * `producer` (the bridge of Effect's metrics) with the unit of each metric of
 * `units` set, and for Prometheus its name suffixed (`prometheusName`).
 */
const withUnits = (producer: MetricProducer, target: "otlp" | "prometheus"): MetricProducer => ({
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
const registerReader = (reader: MetricReader, target: "otlp" | "prometheus", shutdownTimeout: Duration.Input) =>
  Effect.flatMap(
    OtelMetrics.makeProducer(),
    (producer) => OtelMetrics.registerProducer(withUnits(producer, target), () => reader, { shutdownTimeout })
  )

/** The address of the Prometheus scrape endpoint, when one is served. */
export class PrometheusEndpoint extends Context.Service<
  PrometheusEndpoint,
  { readonly url: Option.Option<string> }
>()("@gcx/http/Telemetry/PrometheusEndpoint") {}

/** What an OTLP exporter reports of one export (`@opentelemetry/core`'s `ExportResult`; code 0 is success). */
interface ExportResult {
  readonly code: number
  readonly error?: Error | undefined
}

interface Exporter<Items> {
  export(items: Items, resultCallback: (result: ExportResult) => void): void
}

/**
 * Makes an exporter count and log its failures: each failed export adds one
 * to `gcx.telemetry.exports.failed{signal}`; the first one of each signal is
 * logged as a warning (through the application's logger, run with `context`).
 */
const guard = <E extends Exporter<any>>(exporter: E, signal: Signal, context: Context.Context<never>): E => {
  const failed = Metrics.labelled(exportsFailedFamily, { signal })
  const original = exporter.export.bind(exporter)
  const run = Effect.runForkWith(context)
  let logged = false
  exporter.export = (items, resultCallback) =>
    original(items, (result) => {
      if (result.code !== 0) {
        const warn = logged ? Effect.void : Effect.logWarning(
          `telemetry: a ${signal} export failed; failed exports are dropped and counted in gcx.telemetry.exports.failed`
        ).pipe(Effect.annotateLogs({ signal, reason: result.error?.message ?? "unknown" }))
        logged = true
        run(Effect.andThen(Metrics.update(failed, 1), warn))
      }
      resultCallback(result)
    })
  return exporter
}

const probe = OtelApi.ROOT_CONTEXT.setValue(OtelApi.createContextKey("gcx.telemetry.probe"), true)

/** Whether an OpenTelemetry context manager is registered: without one, `context.with` does nothing. */
export const hasContextManager = (): boolean => OtelApi.context.with(probe, () => OtelApi.context.active() === probe)

/**
 * `tracer` (Effect's OpenTelemetry tracer), whose work around every fiber run
 * (making the current span OpenTelemetry's active context) is skipped while no
 * OpenTelemetry context manager is registered, as it changes nothing then.
 * Whether one is registered is checked again at each new span, so that a
 * manager registered later is honoured from the next span on.
 */
export const skipUselessContext = (tracer: Tracer.Tracer): Tracer.Tracer => {
  let managed = hasContextManager()
  const context = tracer.context
  return Tracer.make({
    span(options) {
      managed = hasContextManager()
      return tracer.span(options)
    },
    context: context === undefined
      ? undefined
      : (primitive, fiber) => managed ? context(primitive, fiber) : primitive["~effect/Effect/evaluate"](fiber)
  })
}

/** Effect's OpenTelemetry tracer over the context's `OtelTracer`, made with `skipUselessContext`. */
export const layerTracer: Layer.Layer<never, never, OtelTracer.OtelTracer> = Layer.effect(
  Tracer.Tracer,
  Effect.map(OtelTracer.make, skipUselessContext)
)

/** Effect's OpenTelemetry tracer over a tracer provider with `processor` (`layerTracer`). */
const tracing = (processor: BatchSpanProcessor, shutdownTimeout: Duration.Input) =>
  layerTracer.pipe(
    Layer.provide(OtelTracer.layerTracer),
    Layer.provide(NodeSdk.layerTracerProvider(processor, { shutdownTimeout }))
  )

/** Serves `exporter`'s scrape at `/metrics` on loopback (or `host`) until the scope closes. */
const servePrometheus = (exporter: PrometheusExporter, port: number, host: string) =>
  Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const server = http.createServer((request, response) => {
        if (request.url === "/metrics" || request.url?.startsWith("/metrics?")) {
          exporter.getMetricsRequestHandler(request, response)
        } else {
          response.statusCode = 404
          response.end()
        }
      })
      server.once("error", (error) => resume(Effect.die(error)))
      server.listen(port, host, () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )

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
    const base = options.endpoint?.replace(/\/+$/, "")
    const readers: Array<Effect.Effect<unknown, never, Resource.Resource | Scope.Scope>> = []
    let spanProcessor: BatchSpanProcessor | undefined
    if (base !== undefined) {
      const traces = guard(new OTLPTraceExporter({ url: `${base}/v1/traces`, timeoutMillis }), "traces", context)
      spanProcessor = new BatchSpanProcessor(traces, { exportTimeoutMillis: timeoutMillis })
      const metrics = guard(new OTLPMetricExporter({ url: `${base}/v1/metrics`, timeoutMillis }), "metrics", context)
      const intervalMillis = Duration.toMillis(options.metricExportInterval ?? "10 seconds")
      const reader = new PeriodicExportingMetricReader({
        exporter: metrics,
        exportIntervalMillis: intervalMillis,
        // the reader requires an export to end before the next one is due
        exportTimeoutMillis: Math.min(timeoutMillis, intervalMillis)
      })
      readers.push(registerReader(reader, "otlp", shutdownTimeout))
    }
    let endpoint = Layer.succeed(PrometheusEndpoint, { url: Option.none() })
    if (options.prometheus !== undefined) {
      const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true })
      readers.push(registerReader(exporter, "prometheus", shutdownTimeout))
      const host = options.prometheus.host ?? "127.0.0.1"
      const server = yield* servePrometheus(exporter, options.prometheus.port, host)
      const { port } = server.address() as AddressInfo
      endpoint = Layer.succeed(PrometheusEndpoint, {
        url: Option.some(`http://${host.includes(":") ? `[${host}]` : host}:${port}/metrics`)
      })
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
