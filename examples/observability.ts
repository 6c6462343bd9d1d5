/**
 * observability: export gcx's spans and metrics with OpenTelemetry, and serve a Prometheus scrape.
 *
 *   pnpm example observability
 *
 * `@gcx/http/Telemetry` wires `@effect/opentelemetry`'s NodeSdk with OTLP/HTTP exporters. A real
 * program takes `Telemetry.layerConfig()` and sets OTEL_EXPORTER_OTLP_ENDPOINT (and
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) to point it at its collector. Here the collector is
 * a stand-in started on loopback (`@gcx/sandbox/OtlpReceiver`), so that the example shows what
 * arrives: the spans of each quote and the metric series. It then prints the Prometheus scrape.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import * as Telemetry from "@gcx/http/Telemetry"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Console, Effect, Layer, Option } from "effect"

const GcxLive = QuotePoller.layer().pipe(
  Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(UndiciClient.layer)
)

const cards = [
  { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" },
  { cardNumber: "6006000000000019", pinNumber: "1234", productLineId: "2000" },
  { cardNumber: "6006000000000035", pinNumber: "1234", productLineId: "1000" } // refused: invalid card
]

/** Quotes the cards; prints the scrape while the Prometheus endpoint is up. */
const quotes = Effect.gen(function*() {
  const poller = yield* QuotePoller.QuotePoller
  const outcomes = yield* Effect.forEach(cards, (card) =>
    poller.getQuote(card).pipe(
      Effect.match({ onSuccess: () => "Completed", onFailure: (error) => error._tag })
    ), { concurrency: cards.length })
  yield* Console.log(`outcomes: ${outcomes.join(", ")}`)
  const { url } = yield* Telemetry.PrometheusEndpoint
  const scrape = yield* Effect.promise(() => fetch(Option.getOrThrow(url)).then((response) => response.text()))
  const gcxLines = scrape.split("\n").filter((line) => /^(gcx_|http_client)/.test(line) && !line.includes("_bucket"))
  yield* Console.log(`\nPrometheus scrape (${Option.getOrThrow(url)}), gcx series without buckets:`)
  yield* Console.log(gcxLines.map((line) => `  ${line}`).join("\n"))
})

const program = Effect.gen(function*() {
  const collector = yield* OtlpReceiver.make()
  yield* Console.log(`a stand-in OTLP collector listens at ${collector.url}`)
  // Closing the telemetry layer flushes the spans and metrics to the collector.
  yield* quotes.pipe(
    Effect.provide(GcxLive),
    Effect.provide(Telemetry.layer({
      endpoint: collector.url,
      serviceName: "gcx-example",
      prometheus: { port: 0 }
    }))
  )
  const spans = collector.spans()
  yield* Console.log(`\nthe collector received ${spans.length} spans:`)
  const counts = new Map<string, number>()
  for (const span of spans) counts.set(span.name, (counts.get(span.name) ?? 0) + 1)
  for (const [name, count] of counts) yield* Console.log(`  ${name} x${count}`)
  const metrics = collector.metrics().filter((point) => point.name.startsWith("gcx.") || point.name.startsWith("http."))
  yield* Console.log(`and ${metrics.length} metric series, among them:`)
  for (const name of ["gcx.quotes.submitted", "gcx.polls", "gcx.token.fetches"]) {
    yield* Console.log(`  ${name} = ${OtlpReceiver.valueOf(metrics, name)}`)
  }
  if (!counts.has("QuotePoller.getQuote") || OtlpReceiver.valueOf(metrics, "gcx.quotes.submitted") !== cards.length) {
    return yield* Effect.die(new Error("the collector did not receive the quotes' spans and metrics"))
  }
}).pipe(Effect.scoped)

program.pipe(NodeRuntime.runMain)
