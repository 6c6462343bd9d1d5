/**
 * OTLP export of spans and metrics (`@gcx/http/Telemetry`) to a real HTTP
 * receiver on loopback, for quotes against a real sandbox. Metric values are
 * process-wide: this file runs alone in its process (vitest isolates files),
 * so the counts start from zero.
 */
import { describe, expect, layer } from "@effect/vitest"
import * as Telemetry from "@gcx/http/Telemetry"
import { Sandbox, TestData } from "@gcx/sandbox"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Effect } from "effect"
import { QuotePoller } from "../src/index.js"
import { card, sandbox, withPoller } from "./fixtures.js"

const { Cards } = TestData

describe("Telemetry over OTLP/HTTP JSON", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("a real receiver on loopback", (it) => {
    it.effect("spans nest under each quote, one token fetch; metrics match the sandbox's journal", () =>
      Effect.gen(function*() {
        const receiver = yield* OtlpReceiver.make()
        const cards = [Cards.success, Cards.success, Cards.instant, Cards.invalid, Cards.success]
        const results = yield* Effect.flatMap(
          QuotePoller.QuotePoller,
          (poller) =>
            Effect.forEach(cards, (number) => Effect.result(poller.getQuote(card(number))), { concurrency: 5 })
        ).pipe(
          withPoller(),
          // closing the layer flushes spans and metrics
          Effect.provide(Telemetry.layer({ endpoint: receiver.url, metricExportInterval: "1 hour" }))
        )
        const journal = yield* Effect.flatMap(Sandbox.SandboxServer, (server) => server.journal)
        expect(results.map((result) => result._tag)).toEqual(["Success", "Success", "Success", "Failure", "Success"])

        // spans: the quote's span is the parent of its POST and of every GET; one token fetch
        const spans = receiver.spans()
        const quotes = spans.filter((span) => span.name === "QuotePoller.getQuote")
        expect(quotes.length).toBe(cards.length)
        const children = (name: string, parent: OtlpReceiver.Span) =>
          spans.filter((span) => span.name === name && span.parentSpanId === parent.spanId)
        for (const quote of quotes) {
          expect(children("ExchangeClient.createQuote", quote).length).toBe(1)
        }
        const gets = spans.filter((span) => span.name === "ExchangeClient.getTransaction")
        expect(gets.length).toBe(journal.requests.getTransaction)
        const quoteIds = new Set(quotes.map((span) => span.spanId))
        expect(gets.every((span) => span.parentSpanId !== undefined && quoteIds.has(span.parentSpanId))).toBe(true)
        expect(spans.filter((span) => span.name === "TokenProvider.fetchToken").length).toBe(1)

        // metrics: the counts the journal gives
        const points = receiver.metrics()
        const value = (name: string, attributes?: Record<string, unknown>) =>
          OtlpReceiver.valueOf(points, name, attributes)
        expect(value("gcx.quotes.submitted")).toBe(cards.length)
        expect(value("gcx.quotes.outcomes", { outcome: "Completed" })).toBe(4)
        expect(value("gcx.quotes.outcomes", { outcome: "InvalidCard" })).toBe(1)
        expect(value("gcx.quote.duration")).toBe(cards.length)
        expect(value("gcx.quotes.in_flight")).toBe(0)
        expect(value("gcx.polls")).toBe(journal.requests.getTransaction)
        expect(value("gcx.token.fetches", { result: "success" })).toBe(journal.requests.token)
        for (const operation of ["token", "createQuote", "getTransaction"] as const) {
          expect(value("http.client.request.duration", { "gcx.operation": operation })).toBe(
            journal.requests[operation]
          )
        }
        expect(
          value("http.client.request.duration", { "gcx.operation": "createQuote", "http.response.status_code": "201" })
        )
          .toBe(journal.requests.createQuote)
        // labels: small closed sets, never an id
        const labels = points.flatMap((point) => Object.values(point.attributes).map(String))
        const ids = [
          ...spans.flatMap((span) => [span.attributes.requestId, span.attributes.transactionId]),
          ...journal.entries.map((entry) => entry.requestId)
        ].filter((id): id is string => typeof id === "string")
        expect(ids.length).toBeGreaterThan(0)
        expect(labels.filter((label) => ids.includes(label))).toEqual([])
      }).pipe(Effect.scoped))
  })
})
