/**
 * A stand-in OpenTelemetry collector for tests, examples and benchmarks: a
 * real HTTP server on loopback that receives OTLP/HTTP JSON (`/v1/traces`,
 * `/v1/metrics`, `/v1/logs`), keeps every body, and reads the spans and the
 * latest value of every metric series out of them. It can also play a
 * collector that is slow (`delay`) or refuses (`status`), or keep nothing
 * (`discard`, a no-op receiver for benchmarks).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** How the receiver behaves. */
export interface Options {
  /** Wait this long before answering each export (a slow collector). */
  readonly delayMillis?: number | undefined
  /** Answer every export with this status (default 200). */
  readonly status?: number | undefined
  /** Keep nothing: count the exports only. */
  readonly discard?: boolean | undefined
}

/** An attribute as OTLP JSON carries it. */
interface KeyValue {
  readonly key: string
  readonly value: Record<string, unknown>
}

/** One span received. */
export interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly attributes: Record<string, unknown>
}

/** The latest point of one metric series (a metric name and one set of attributes). */
export interface Point {
  readonly name: string
  readonly attributes: Record<string, unknown>
  /** A sum's or a gauge's value. */
  readonly value?: number | undefined
  /** A histogram's count, bucket counts and bounds. */
  readonly count?: number | undefined
  readonly bucketCounts?: ReadonlyArray<number> | undefined
  readonly explicitBounds?: ReadonlyArray<number> | undefined
}

/** A running receiver. */
export interface OtlpReceiver {
  /** The base address to export to (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  readonly url: string
  /** Every body received, by path, parsed; in order. */
  readonly bodies: ReadonlyArray<{ readonly path: string; readonly body: unknown }>
  /** Exports received (kept or not). */
  readonly exports: () => number
  /** Every span received. */
  readonly spans: () => ReadonlyArray<Span>
  /** The latest point of every metric series received. */
  readonly metrics: () => ReadonlyArray<Point>
}

const scalar = (value: Record<string, unknown>): unknown => {
  for (const key of ["stringValue", "boolValue", "doubleValue"]) if (key in value) return value[key]
  if ("intValue" in value) return Number(value.intValue)
  return value
}

/** OTLP attributes as a plain record. */
export const attributesOf = (attributes: ReadonlyArray<KeyValue> | undefined): Record<string, unknown> =>
  Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, scalar(value)]))

const list = (value: unknown, key: string): ReadonlyArray<any> => {
  const inner = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined
  return Array.isArray(inner) ? inner : []
}

const spansOf = (body: unknown): Array<Span> =>
  list(body, "resourceSpans").flatMap((resource) =>
    list(resource, "scopeSpans").flatMap((scope) =>
      list(scope, "spans").map((span): Span => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId === "" ? undefined : span.parentSpanId,
        name: span.name,
        attributes: attributesOf(span.attributes)
      }))
    )
  )

const pointsOf = (body: unknown): Array<Point> =>
  list(body, "resourceMetrics").flatMap((resource) =>
    list(resource, "scopeMetrics").flatMap((scope) =>
      list(scope, "metrics").flatMap((metric) => {
        const name: string = metric.name
        const numbers = [...list(metric.sum, "dataPoints"), ...list(metric.gauge, "dataPoints")].map((
          point
        ): Point => ({
          name,
          attributes: attributesOf(point.attributes),
          value: Number(point.asDouble ?? point.asInt ?? 0)
        }))
        const histograms = list(metric.histogram, "dataPoints").map((point): Point => ({
          name,
          attributes: attributesOf(point.attributes),
          count: Number(point.count ?? 0),
          bucketCounts: (point.bucketCounts ?? []).map(Number),
          explicitBounds: point.explicitBounds ?? []
        }))
        return [...numbers, ...histograms]
      })
    )
  )

/** Starts a receiver on 127.0.0.1 (a free port) for the life of the scope. */
export const make = (options: Options = {}): Effect.Effect<OtlpReceiver, never, Scope.Scope> =>
  Effect.gen(function*() {
    const bodies: Array<{ readonly path: string; readonly body: unknown }> = []
    let exports = 0
    const server = http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        exports++
        if (!options.discard) {
          const text = Buffer.concat(chunks).toString("utf8")
          try {
            bodies.push({ path: request.url ?? "", body: JSON.parse(text) })
          } catch {
            bodies.push({ path: request.url ?? "", body: text })
          }
        }
        const answer = () => {
          response.statusCode = options.status ?? 200
          response.setHeader("content-type", "application/json")
          response.end("{}")
        }
        if (options.delayMillis === undefined) answer()
        else setTimeout(answer, options.delayMillis).unref()
      })
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    const received = (path: string) => bodies.filter((entry) => entry.path === path).map((entry) => entry.body)
    return {
      url: `http://127.0.0.1:${port}`,
      bodies,
      exports: () => exports,
      spans: () => received("/v1/traces").flatMap(spansOf),
      metrics: () => {
        const latest = new Map<string, Point>()
        for (const point of received("/v1/metrics").flatMap(pointsOf)) {
          latest.set(`${point.name} ${JSON.stringify(point.attributes)}`, point)
        }
        return [...latest.values()]
      }
    }
  })

/** The value of a counter or gauge series (0 when it was never exported). */
export const valueOf = (
  points: ReadonlyArray<Point>,
  name: string,
  attributes: Record<string, unknown> = {}
): number =>
  points.filter((point) =>
    point.name === name && Object.entries(attributes).every(([key, value]) => point.attributes[key] === value)
  ).reduce((sum, point) => sum + (point.value ?? point.count ?? 0), 0)
