/**
 * The Prometheus scrape endpoint of `@gcx/http/Telemetry`, scraped over real
 * HTTP during and after a batch against a real sandbox (durations carry their
 * unit in the Prometheus name: `gcx_quote_duration_seconds`,
 * `http_client_request_duration_seconds`). Metric values are
 * process-wide: this file runs alone in its process (vitest isolates files).
 */
import { describe, expect, layer } from "@effect/vitest"
import { QuoteEvent } from "@gcx/core"
import * as Telemetry from "@gcx/http/Telemetry"
import { TestData } from "@gcx/sandbox"
import { Deferred, Effect, Fiber, Option, Stream } from "effect"
import { QuotePoller } from "../src/index.js"
import { card, sandbox, withPoller } from "./fixtures.js"

const { Cards } = TestData

const scrape = (url: string) => Effect.promise(() => fetch(url).then((response) => response.text()))

/** The value of one sample line, e.g. `gcx_quotes_submitted_total`, or `name{label="x"}`. */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split("\n").find((line) => line.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe("Telemetry: Prometheus scrape", () => {
  layer(sandbox({ timeScale: 0.1 }), { excludeTestServices: true })("during a batch", (it) => {
    it.effect("shows the quote counters and the duration buckets; counts equal the batch's outcomes", () =>
      Effect.gen(function*() {
        const { url } = yield* Telemetry.PrometheusEndpoint
        const cards = [
          ...Array.from({ length: 6 }, () => Cards.success),
          Cards.instant,
          Cards.invalid,
          Cards.merchantUnavailable,
          Cards.slow
        ].map((number) => card(number))
        const poller = yield* QuotePoller.QuotePoller
        const firstOutcome = yield* Deferred.make<void>()
        const outcomes: Record<string, number> = {}
        const batch = yield* poller.quoteAll(cards, { concurrency: cards.length }).pipe(
          Stream.runForEach((item) =>
            Effect.gen(function*() {
              if (item._tag !== "Event" || !QuoteEvent.isTerminal(item.event)) return
              const outcome = item.event._tag === "Completed" ? "Completed" : item.event.error._tag
              outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
              yield* Deferred.succeed(firstOutcome, void 0)
            })
          ),
          Effect.forkChild
        )
        // during the batch: the slow card (30 s, 3 s here) is still in flight
        yield* Deferred.await(firstOutcome)
        const during = yield* scrape(Option.getOrThrow(url))
        expect(batch.pollUnsafe()).toBeUndefined()
        expect(sample(during, "gcx_quotes_submitted_total")).toBe(cards.length)
        expect(sample(during, "gcx_quotes_in_flight")).toBeGreaterThan(0)
        expect(during).toContain("gcx_quotes_outcomes_total{")
        yield* Fiber.join(batch)
        const after = yield* scrape(Option.getOrThrow(url))
        expect(outcomes).toEqual({ Completed: 8, InvalidCard: 1, MerchantUnavailable: 1 })
        for (const [outcome, count] of Object.entries(outcomes)) {
          expect(sample(after, `gcx_quotes_outcomes_total{outcome="${outcome}"}`)).toBe(count)
          expect(sample(after, `gcx_quote_duration_seconds_count{outcome="${outcome}"}`)).toBe(count)
        }
        expect(sample(after, "gcx_quotes_submitted_total")).toBe(cards.length)
        expect(sample(after, "gcx_quotes_in_flight")).toBe(0)
        expect(sample(after, `gcx_quote_duration_seconds_bucket{outcome="Completed",le="+Inf"}`)).toBe(8)
        expect(after).toMatch(/gcx_quote_duration_seconds_bucket\{outcome="Completed",le="0\.5"\} \d+/)
        expect(after).toMatch(/http_client_request_duration_seconds_bucket\{gcx_operation="getTransaction",/)
        expect(after).toContain("gcx_polls_total")
      }).pipe(
        withPoller(),
        Effect.provide(Telemetry.layer({ prometheus: { port: 0 } }))
      ))
  })
})
