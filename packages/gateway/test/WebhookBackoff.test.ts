import { assert, describe, expect, it } from "@effect/vitest"
import { Embedded } from "@gcx/workflow"
import { Clock, Duration, Effect, Fiber, Layer } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { WorkflowEngine } from "effect/workflow"
import * as Path from "node:path"
import { WebhookDelivery } from "../src/index.js"
import * as Backoff from "../src/internal/webhooks/backoff.js"
import * as Webhooks from "./utils/webhooks.js"

const hour = 3_600_000

describe("the waits of a webhook delivery", () => {
  it("10 s × 2^n capped at 1 h, up to 20% shorter, the same for the same execution, cut at 24 h", () => {
    for (let failed = 1; failed <= 40; failed++) {
      const nominal = Math.min(hour, 10_000 * 2 ** (failed - 1))
      const delay = Backoff.delayOf(Backoff.defaults, "exec-a", failed)
      expect(delay).toBeLessThanOrEqual(nominal)
      expect(delay).toBeGreaterThanOrEqual(nominal * 0.8)
      expect(Backoff.delayOf(Backoff.defaults, "exec-a", failed)).toBe(delay)
    }
    // the jitter spreads executions apart
    const spread = new Set(Array.from({ length: 20 }, (_, i) => Backoff.delayOf(Backoff.defaults, `exec-${i}`, 1)))
    expect(spread.size).toBeGreaterThan(10)
    // the last wait is cut so that one attempt falls at 24 h; after it, none
    expect(Backoff.next(Backoff.defaults, "exec-a", 30, 0, 24 * hour - 1000)).toBe(1000)
    expect(Backoff.next(Backoff.defaults, "exec-a", 30, 0, 24 * hour)).toBeUndefined()
  })

  it.effect(
    "a receiver that never accepts: attempts on the durable clock at those waits, given up at 24 h (TestClock)",
    () =>
      Effect.gen(function*() {
        const directory = yield* Webhooks.tempDirectory
        // The receiver answers 503 to everything; what matters is when it is called (the test's clock).
        const calls: Array<number> = []
        const receiver = HttpClient.make((request) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            calls.push(now)
            return HttpClientResponse.fromWeb(request, new Response("down", { status: 503 }))
          })
        )
        const keys = Webhooks.apiKeys(
          Webhooks.keyWith("key_schedule", [{ url: "http://127.0.0.1:9/hooks", secret: "whsec_s" }])
        )
        const deliveries = WebhookDelivery.layer().pipe(
          Layer.provide(keys),
          Layer.provide(Layer.succeed(HttpClient.HttpClient, receiver)),
          Layer.provideMerge(WorkflowEngine.layerMemory),
          Layer.provide(Embedded.layerSqlite(Path.join(directory, "gcx.db"))),
          Layer.orDie
        )
        const payload = { eventId: "evt_schedule", endpointId: "we_1", keyId: "key_schedule", body: "{}" }
        const fiber = yield* WebhookDelivery.DeliveryWorkflow.execute(payload).pipe(
          Effect.provide(deliveries),
          Effect.forkChild
        )
        // the deployment opens its database (real I/O) before the first attempt: wait for it, on the real clock
        for (let i = 0; i < 1000 && calls.length === 0; i++) {
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
        }
        for (let i = 0; i < 2000 && fiber.pollUnsafe() === undefined; i++) {
          yield* TestClock.adjust("1 minute")
        }
        const result = yield* Fiber.join(fiber)
        const executionId = yield* WebhookDelivery.DeliveryWorkflow.executionId(payload)

        // Each wait is the one due after the attempt before (the test's clock moves a minute at a time, so an
        // attempt comes within the minute its wait ends in), until 24 h have passed since the first.
        expect(calls[0]).toBe(0)
        expect(result).toEqual({ delivered: false, attempts: calls.length })
        for (let i = 1; i < calls.length; i++) {
          const wait = Backoff.next(Backoff.defaults, executionId, i, 0, calls[i - 1]!)
          assert(wait !== undefined)
          expect(calls[i]! - calls[i - 1]!).toBeGreaterThanOrEqual(wait)
          expect(calls[i]! - calls[i - 1]!).toBeLessThanOrEqual(wait + 60_000)
        }
        expect(calls.at(-1)).toBeGreaterThanOrEqual(Duration.toMillis(Duration.hours(24)))
        expect(Backoff.next(Backoff.defaults, executionId, calls.length, 0, calls.at(-1)!)).toBeUndefined() // The first waits double from 10 s (less the jitter); later ones are about an hour.
        ;[10_000, 20_000, 40_000, 80_000].forEach((nominal, i) => {
          const gap = calls[i + 1]! - calls[i]!
          expect(gap).toBeGreaterThanOrEqual(nominal * 0.8)
          expect(gap).toBeLessThanOrEqual(nominal)
        })
        expect(calls.at(-1)! - calls.at(-2)!).toBeLessThanOrEqual(3_600_000)
        expect(calls.length).toBeGreaterThan(30)
        expect(calls.length).toBeLessThan(40)
      }).pipe(Effect.scoped),
    60_000
  )
})
