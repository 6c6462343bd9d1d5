/**
 * A collector that is down, refuses or is slow never fails a quote: exports
 * run beside the quotes, and a failed one is dropped, counted in
 * `gcx.telemetry.exports.failed{signal}` and logged once per signal.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Telemetry from "@gcx/http/Telemetry"
import { Capture, TestData } from "@gcx/sandbox"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Effect, Metric, Schedule } from "effect"
import * as Net from "node:net"
import { QuotePoller } from "../src/index.js"
import { card, sandbox, withPoller } from "./fixtures.js"

const { Cards } = TestData

/** A local address where nothing listens: a port bound, then released. */
const nothingListening = Effect.callback<string>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(`http://127.0.0.1:${port}`)))
  })
})

const failedExports = (signal: Telemetry.Signal) =>
  Metric.value(Metric.withAttributes(Telemetry.exportsFailed, { signal })).pipe(Effect.map((state) => state.count))

const collectors = [
  { name: "down (nothing listens)", endpoint: nothingListening },
  { name: "refusing every export (503)", endpoint: Effect.map(OtlpReceiver.make({ status: 503 }), (r) => r.url) },
  // answers after a minute: every export times out, and none has answered while the quotes ran
  {
    name: "slow (answers after a minute)",
    endpoint: Effect.map(OtlpReceiver.make({ delayMillis: 60_000 }), (r) => r.url)
  }
] as const

describe("Telemetry: a collector that is down or slow", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("quotes go on", (it) => {
    it.effect.each(collectors)(
      "$name: every quote completes; failed exports counted and logged once",
      ({ endpoint }) =>
        Effect.gen(function*() {
          const url = yield* endpoint
          const capture = Capture.make()
          const before = { traces: yield* failedExports("traces"), metrics: yield* failedExports("metrics") }
          const results = yield* Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
            Effect.forEach(
              Array.from({ length: 6 }, () => card(Cards.success)),
              (input) => Effect.result(poller.getQuote(input)),
              { concurrency: 6 }
            )).pipe(
              withPoller(),
              Effect.provide(Telemetry.layer({
                endpoint: url,
                metricExportInterval: "50 millis",
                exportTimeout: "200 millis",
                shutdownTimeout: "1 second"
              })),
              Effect.provide(Capture.logs(capture))
            )
          expect(results.every((result) => result._tag === "Success")).toBe(true)
          // a timed-out export reports its failure once its request ends, which may come after the flush gave up
          const counts = Effect.all([failedExports("traces"), failedExports("metrics")])
          const counted = yield* counts.pipe(
            Effect.filterOrFail(([traces, metrics]) => traces > before.traces && metrics > before.metrics),
            Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 100 }),
            Effect.catch(() => counts)
          )
          expect(counted[0]).toBeGreaterThan(before.traces)
          expect(counted[1]).toBeGreaterThan(before.metrics)
          for (const signal of ["traces", "metrics"]) {
            const warnings = capture.lines.filter((line) => line.includes(`telemetry: a ${signal} export failed`))
            expect(warnings.length, signal).toBe(1)
          }
        }).pipe(Effect.scoped)
    )
  })
})
