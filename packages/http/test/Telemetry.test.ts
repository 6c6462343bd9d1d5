/**
 * `Telemetry.skipUselessContext`: Effect's OpenTelemetry tracer makes the
 * current span OpenTelemetry's active context around every fiber run only
 * when a context manager is registered, and then as it always did.
 */
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Metrics } from "@gcx/http"
import * as Telemetry from "@gcx/http/Telemetry"
import * as OtelApi from "@opentelemetry/api"
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base"
import { Effect, Exit, Layer, Option, Tracer } from "effect"
import * as Net from "node:net"
import * as ExportFailures from "../src/internal/telemetry/exportFailures.js"
import * as Flushes from "../src/internal/telemetry/flushes.js"

/**
 * A context manager that keeps the active context on a stack: the tracer's
 * `context.with` runs the fiber synchronously, so a stack serves, and the
 * test needs no async-hooks package of its own.
 */
const stackContextManager = (): OtelApi.ContextManager => {
  const stack: Array<OtelApi.Context> = []
  const manager: OtelApi.ContextManager = {
    active: () => stack.at(-1) ?? OtelApi.ROOT_CONTEXT,
    with: (context, fn, thisArg, ...args) => {
      stack.push(context)
      try {
        return fn.call(thisArg, ...args)
      } finally {
        stack.pop()
      }
    },
    bind: (_context, target) => target,
    enable: () => manager,
    disable: () => {
      stack.length = 0
      return manager
    }
  }
  return manager
}

/** The tracer under test, over a real OpenTelemetry tracer provider (spans kept in memory, exported nowhere). */
const tracerLayer = Telemetry.layerTracer.pipe(
  Layer.provide(Layer.succeed(OtelTracer.OtelTracer, new BasicTracerProvider().getTracer("test")))
)

/** OpenTelemetry's active span id inside an Effect span, and the Effect span's id. */
const activeInsideSpan = Effect.gen(function*() {
  yield* Effect.yieldNow // a new run of the fiber, inside the span
  const effectSpan = yield* Effect.currentSpan
  return { active: OtelApi.trace.getActiveSpan()?.spanContext().spanId, effect: effectSpan.spanId }
}).pipe(Effect.withSpan("outer"))

describe("Telemetry.skipUselessContext", () => {
  afterEach(() => OtelApi.context.disable())

  it.effect("without a context manager, no OpenTelemetry context is set around fiber runs", () =>
    Effect.gen(function*() {
      expect(Telemetry.hasContextManager()).toBe(false)
      const { active, effect } = yield* activeInsideSpan
      expect(active).toBeUndefined()
      expect(effect).toMatch(/^[0-9a-f]{16}$/)
    }).pipe(Effect.provide(tracerLayer)))

  it.effect("with a context manager, the current Effect span is OpenTelemetry's active span", () =>
    Effect.gen(function*() {
      expect(OtelApi.context.setGlobalContextManager(stackContextManager())).toBe(true)
      expect(Telemetry.hasContextManager()).toBe(true)
      const { active, effect } = yield* activeInsideSpan
      expect(active).toBe(effect)
    }).pipe(Effect.provide(tracerLayer)))

  it.effect("without a context manager the tracer has no per-operation hook; with one, from the next span on", () =>
    Effect.gen(function*() {
      const tracer = yield* Tracer.Tracer
      expect(tracer.context).toBeUndefined()
      expect(OtelApi.context.setGlobalContextManager(stackContextManager())).toBe(true)
      yield* Effect.void.pipe(Effect.withSpan("next"))
      expect(tracer.context).toBeTypeOf("function")
    }).pipe(Effect.provide(tracerLayer)))

  it.effect("a context manager registered after the tracer is honoured from the next span on", () =>
    Effect.gen(function*() {
      const before = yield* activeInsideSpan
      expect(OtelApi.context.setGlobalContextManager(stackContextManager())).toBe(true)
      const after = yield* activeInsideSpan
      expect(before.active).toBeUndefined()
      expect(after.active).toBe(after.effect)
    }).pipe(Effect.provide(tracerLayer)))
})

describe("Telemetry units", () => {
  it("prometheusName adds the suffix of the unit, once", () => {
    expect(Telemetry.prometheusName("http.client.request.duration", "s")).toBe("http.client.request.duration_seconds")
    expect(Telemetry.prometheusName("gcx.quote.duration_seconds", "s")).toBe("gcx.quote.duration_seconds")
    expect(Telemetry.prometheusName("gcx.retries", undefined)).toBe("gcx.retries")
    expect(Telemetry.prometheusName("gcx.retries", "1")).toBe("gcx.retries")
  })

  it.live("the Prometheus scrape names the durations in seconds, with their unit, and no unit label", () =>
    Effect.gen(function*() {
      yield* Metrics.recordRequest("heartbeat", 250, { status: 200 })
      yield* Metrics.recordRetry("heartbeat", { _tag: "ServiceUnavailable" })
      const { url } = yield* Telemetry.PrometheusEndpoint
      const text = yield* Effect.promise(() => fetch(Option.getOrThrow(url)).then((response) => response.text()))
      expect(text).toContain("# UNIT http_client_request_duration_seconds s")
      expect(text).toMatch(
        /http_client_request_duration_seconds_bucket\{[^}]*gcx_operation="heartbeat"[^}]*le="0\.25"\} 1/
      )
      expect(text).toContain("http_client_request_duration_seconds_count")
      expect(text).not.toMatch(/^http_client_request_duration_bucket/m)
      expect(text).not.toContain("unit=\"")
      // a metric without a unit keeps its name (a counter gets `_total`)
      expect(text).toMatch(/^gcx_retries_total\{/m)
    }).pipe(Effect.provide(Telemetry.layer({ prometheus: { port: 0 } }))))
})

/** A local address where nothing listens: a port bound, then released. */
const nothingListening = Effect.callback<string>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(`http://127.0.0.1:${port}`)))
  })
})

describe("Telemetry: flushes that fail", () => {
  it.live("settle: a rejection or a flush that never ends resolves, reported once", () =>
    Effect.gen(function*() {
      const reasons: Array<unknown> = []
      const report = (reason: unknown) => reasons.push(reason)
      yield* Effect.promise(() => Flushes.settle(() => Promise.reject(new Error("refused")), 1_000, report))
      yield* Effect.promise(() => Flushes.settle(() => new Promise(() => {}), 20, report))
      yield* Effect.promise(() => Flushes.settle(() => Promise.resolve(), 1_000, report))
      yield* Effect.promise(() =>
        Flushes.settle(
          () => {
            throw new Error("thrown")
          },
          1_000,
          report
        )
      )
      expect(reasons.map((reason) => reason instanceof Error ? reason.message : reason)).toEqual([
        "refused",
        "gave up after 20 ms",
        "thrown"
      ])
    }))

  it.live("closing the layer with a collector that is down succeeds, within shutdownTimeout", () =>
    Effect.gen(function*() {
      const endpoint = yield* nothingListening
      const started = Date.now()
      const exit = yield* Effect.void.pipe(
        Effect.withSpan("flushed at close"),
        Effect.provide(Telemetry.layer({ endpoint, exportTimeout: "100 millis", shutdownTimeout: "500 millis" })),
        Effect.exit
      )
      expect(Exit.isSuccess(exit), String(exit)).toBe(true)
      expect(Date.now() - started).toBeLessThan(2_000)
    }))

  it("describeReason keeps an error's first line, short, and nothing else it carries", () => {
    const error = Object.assign(new Error("Service Unavailable"), { data: "the collector's whole answer" })
    expect(ExportFailures.describeReason(error)).toBe("Service Unavailable")
    expect(ExportFailures.describeReason([new Error("a\nstack"), new Error("b")])).toBe("a; b")
    expect(ExportFailures.describeReason(new Error("x".repeat(500))).length).toBe(200)
    expect(ExportFailures.describeReason({ secret: 1 })).toBe("unknown")
  })
})
