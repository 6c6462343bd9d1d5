/**
 * Telemetry of the `gcx` command. With `OTEL_EXPORTER_OTLP_ENDPOINT` set,
 * every command exports its spans and metrics over OTLP/HTTP
 * (`@gcx/http/Telemetry`, configured by the standard `OTEL_*` variables) and
 * flushes them before it exits; `gcx batch --metrics-port N` also serves
 * Prometheus text at `/metrics` while it runs, on `OTEL_EXPORTER_PROMETHEUS_HOST`
 * (default 127.0.0.1). The OpenTelemetry SDK is loaded only when asked for,
 * so that a command without telemetry starts as fast as before.
 */
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

const endpointSet = Config.String("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(
  Config.map((endpoint) => endpoint.trim() !== ""),
  Config.withDefault(false)
)

/** OTLP export of every command, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; nothing otherwise. */
export const layer: Layer.Layer<never, Config.ConfigError> = Layer.unwrap(
  Effect.gen(function*() {
    if (!(yield* endpointSet)) return Layer.empty
    const Telemetry = yield* Effect.promise(() => import("@gcx/http/Telemetry"))
    // its services (the resource, the scrape endpoint) are of no use here; what matters is what it
    // installs: the tracer, and the exporters flushed when the command's scope closes
    return Telemetry.layerConfig()
  })
)

/**
 * A Prometheus scrape endpoint on `port` (none: nothing) for the life of a
 * command, its address printed on stderr.
 */
export const prometheus = (port: Option.Option<number>): Layer.Layer<never, Config.ConfigError> =>
  Option.match(port, {
    onNone: () => Layer.empty,
    onSome: (port) =>
      Layer.unwrap(Effect.gen(function*() {
        const host = yield* Config.String("OTEL_EXPORTER_PROMETHEUS_HOST").pipe(Config.withDefault("127.0.0.1"))
        const Telemetry = yield* Effect.promise(() => import("@gcx/http/Telemetry"))
        return Layer.effectDiscard(
          Effect.flatMap(
            Telemetry.PrometheusEndpoint,
            ({ url }) => Console.error(`gcx: metrics at ${Option.getOrElse(url, () => "?")}`)
          )
        ).pipe(Layer.provide(Telemetry.layer({ prometheus: { port, host } })))
      }))
  })
