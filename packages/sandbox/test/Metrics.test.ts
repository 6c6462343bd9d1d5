import { expect, layer } from "@effect/vitest"
import { Routes } from "@gcx/core"
import { Metrics, Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Metric } from "effect"
import { call, exchangeHeaders, postQuote, quoteBody, tokenFor } from "./helpers.js"

/** The current count of a counter (the registry is global: tests compare before and after). */
const count = (counter: Metric.Counter<number>) => Effect.map(Metric.value(counter), (state) => state.count)

layer(Sandbox.layer({ timeScale: 0.01 }), { excludeTestServices: true })("sandbox metrics", (it) => {
  it.effect("count requests by route and status, and faults by kind; labels carry no requestId or card data", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      const counters = {
        token: Metrics.requestCounter("token", 200),
        created: Metrics.requestCounter("createQuote", 201),
        unavailable: Metrics.requestCounter("createQuote", 503),
        reset: Metrics.requestCounter("heartbeat", undefined),
        heartbeat: Metrics.requestCounter("heartbeat", 200),
        status503: Metrics.faultCounter("status503"),
        resetFault: Metrics.faultCounter("reset")
      }
      const before = yield* Effect.forEach(Object.values(counters), count)

      const token = yield* tokenFor(server)
      const requestId = "sentinel-request-id-4242"
      yield* server.setFaults([
        { route: "createQuote", kind: "status503", times: 2 },
        { route: "heartbeat", kind: "reset", times: 1 }
      ])
      for (let attempt = 0; attempt < 3; attempt++) {
        yield* postQuote(
          server,
          exchangeHeaders(token, { requestId, previousAttempts: attempt }),
          quoteBody(TestData.Cards.instant)
        )
      }
      const heartbeat = call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) })
      yield* Effect.result(heartbeat)
      yield* heartbeat

      const after = yield* Effect.forEach(Object.values(counters), count)
      const delta = Object.fromEntries(
        Object.keys(counters).map((name, index) => [name, after[index]! - before[index]!])
      )
      expect(delta).toEqual({
        token: 1,
        created: 1,
        unavailable: 2,
        reset: 1,
        heartbeat: 1,
        status503: 2,
        resetFault: 1
      })

      // Every attribute of the sandbox's metrics: the fixed keys, and no requestId, card number or PIN in any value.
      const series = (yield* Metric.snapshot).filter((snapshot) => snapshot.id.startsWith("gcx.sandbox."))
      expect(series.length).toBeGreaterThan(0)
      for (const snapshot of series) {
        const attributes = snapshot.attributes ?? {}
        expect(Object.keys(attributes).sort()).toEqual(
          snapshot.id === "gcx.sandbox.faults" ? ["kind"] : ["http.response.status_code", "route"]
        )
        for (const value of Object.values(attributes)) {
          for (const secret of [requestId, TestData.Cards.instant, TestData.pin, token]) {
            expect(value).not.toContain(secret)
          }
        }
      }
    }))
})
