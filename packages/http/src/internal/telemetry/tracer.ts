/**
 * Effect's OpenTelemetry tracer. It makes the current span OpenTelemetry's
 * active context around every run of a fiber, for libraries instrumented with
 * OpenTelemetry. That only has an effect when a context manager is registered
 * (`NodeSdk` registers none); without one it is skipped, which saves a context
 * object and a few calls per fiber run (`skipUselessContext`).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import * as OtelApi from "@opentelemetry/api"
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"

const probe = OtelApi.ROOT_CONTEXT.setValue(OtelApi.createContextKey("gcx.telemetry.probe"), true)

/** Whether an OpenTelemetry context manager is registered: without one, `context.with` does nothing. */
export const hasContextManager = (): boolean => OtelApi.context.with(probe, () => OtelApi.context.active() === probe)

/**
 * `tracer` (Effect's OpenTelemetry tracer), whose work around every fiber run
 * (making the current span OpenTelemetry's active context) is skipped while no
 * OpenTelemetry context manager is registered, as it changes nothing then.
 * Whether one is registered is checked again at each new span, so that a
 * manager registered later is honoured from the next span on.
 *
 * The hook (`context`) is absent while it would be skipped: the runtime reads
 * it into a fiber's cache whenever the fiber's context changes (a new span
 * does), and with a hook every operation of the fiber goes through it. So a
 * span already open when a manager is registered stays without the hook;
 * register the manager before the first span.
 */
export const skipUselessContext = (tracer: Tracer.Tracer): Tracer.Tracer => {
  let managed = hasContextManager()
  const context = tracer.context
  return Tracer.make({
    span(options) {
      managed = hasContextManager()
      return tracer.span(options)
    },
    get context() {
      return managed ? context : undefined
    }
  })
}

/** Effect's OpenTelemetry tracer over the context's `OtelTracer`, made with `skipUselessContext`. */
export const layerTracer: Layer.Layer<never, never, OtelTracer.OtelTracer> = Layer.effect(
  Tracer.Tracer,
  Effect.map(OtelTracer.make, skipUselessContext)
)

/**
 * Effect's OpenTelemetry tracer (`layerTracer`) over a tracer provider with
 * `processor`, flushed and shut down when the scope closes. The provider's
 * release does not survive a rejected flush (it would die with the exporter's
 * error): `processor` must be one whose `forceFlush` and `shutdown` never
 * reject (`Flushes.settle`).
 */
export const tracing = (processor: SpanProcessor, shutdownTimeout: Duration.Input) =>
  layerTracer.pipe(
    Layer.provide(OtelTracer.layerTracer),
    Layer.provide(NodeSdk.layerTracerProvider(processor, { shutdownTimeout }))
  )
