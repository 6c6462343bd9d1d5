/**
 * The secrets scan against a service that echoes the card number (issue 20,
 * item 2): quotes through the poller (`quoteAll`) against a sandbox process
 * with faults (503, 500, resets, dropped POST answers), behind a proxy on
 * loopback that puts each request's card number into SVC-TRACE-ID, the
 * Location, every text of an Error body (ErrorCode, Message, UserMessage,
 * MoreInfoUrl) and every step tag. Everything the run lets out (log lines at
 * every level, spans, the events of the streams and of the bus, every error in
 * several renderings, the OTLP export and a Prometheus scrape) holds no full
 * card number, and no text of the service over 1,024 characters.
 *
 * Size: 200 quotes; 50 when CI=true.
 */
import { describe, expect, it } from "@effect/vitest"
import { QuoteEvent, Routes } from "@gcx/core"
import * as Telemetry from "@gcx/http/Telemetry"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import type { Faults } from "@gcx/sandbox"
import { TestData } from "@gcx/sandbox"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Effect, Option, Stream } from "effect"
import { randomInt } from "node:crypto"
import * as Http from "node:http"
import { pollerLayer } from "../internal/gcx.js"
import * as Capture from "./capture.js"
import { listen } from "./loopback.js"
import { sandboxProcess } from "./sandbox.js"

const quotes = process.env.CI === "true" ? 50 : 200

const faults: ReadonlyArray<Faults.FaultRule> = [
  { route: "any", kind: "status503", probability: 0.1 },
  { route: "any", kind: "status500", probability: 0.05 },
  { route: "any", kind: "reset", probability: 0.05 },
  { route: "createQuote", kind: "dropAnswer", probability: 0.05 }
]

const cards = Array.from({ length: quotes }, (_, index) => ({
  cardNumber: index % 10 === 0
    ? TestData.Cards.invalid
    : index % 10 === 1
    ? TestData.Cards.merchantUnavailable
    : `4929${String(randomInt(0, 1e12)).padStart(12, "0")}`,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}))

/** The texts of the service's answers that the proxy plants the card number in. */
const texts = new Set(["ErrorCode", "Message", "UserMessage", "MoreInfoUrl", "descriptionTag"])

/**
 * A proxy in front of `target` that echoes each request's card number (read
 * from the POST's body, then remembered by transaction id; the first card for
 * the token endpoint) into the trace id, the Location and every text.
 */
const echoingProxy = (target: string, byTransaction: Map<string, string>) =>
  listen((request, sent, response) => {
    const id = request.url?.split("/").at(-1) ?? ""
    const posted = request.method === "POST" && request.url?.endsWith(Routes.quotePath())
      ? (JSON.parse(sent) as { card: { cardNumber: string } }).card.cardNumber
      : undefined
    const card = posted ?? byTransaction.get(id) ?? cards[0]!.cardNumber
    const upstream = Http.request(new URL(request.url ?? "/", target), {
      method: request.method,
      headers: request.headers
    }, (answer) => {
      const body: Array<Buffer> = []
      answer.on("data", (chunk: Buffer) => body.push(chunk))
      answer.on("error", () => response.destroy())
      answer.on("end", () => {
        let out = Buffer.concat(body).toString("utf8")
        try {
          const json = JSON.parse(out) as Record<string, unknown>
          if (posted !== undefined && typeof json.transactionId === "string") {
            byTransaction.set(json.transactionId, posted)
          }
          if (typeof json.ErrorCode === "string") json.MoreInfoUrl = "https://example.test/more"
          out = JSON.stringify(json, (key, value) =>
            texts.has(key) && typeof value === "string" ? `${value} ${card}` : value)
        } catch {
          // not JSON: passed as it is
        }
        const headers: Http.OutgoingHttpHeaders = {
          ...answer.headers,
          "svc-trace-id": card,
          "content-length": String(Buffer.byteLength(out))
        }
        delete headers["transfer-encoding"]
        if (typeof headers.location === "string") {
          headers.location = `${headers.location}?card=${card}`
        }
        response.writeHead(answer.statusCode ?? 502, headers)
        response.end(out)
      })
    })
    // a reset or a dropped answer upstream is one here too
    upstream.on("error", () =>
      response.destroy())
    upstream.end(sent)
  })

const sandbox = sandboxProcess([{ seed: 11, faults }])

/** Every string in a value, however deep. */
const strings = (value: unknown): Array<string> =>
  typeof value === "string"
    ? [value]
    : typeof value === "object" && value !== null
    ? Object.values(value).flatMap(strings)
    : []

describe(`secrets scan: ${quotes} quotes from a service that echoes the card number into every text`, () => {
  it("no full card number in any log, event, error, span or export; no service text over 1,024 characters", () =>
    Effect.gen(function*() {
      const endpoint = sandbox.get().endpoint
      const byTransaction = new Map<string, string>()
      const proxied = (url: string) =>
        Effect.map(echoingProxy(new URL(url).origin, byTransaction), (proxy) => url.replace(new URL(url).origin, proxy))
      const echoing = {
        ...endpoint,
        baseUrl: yield* proxied(endpoint.baseUrl),
        authUrl: yield* proxied(endpoint.authUrl)
      }
      const receiver = yield* OtlpReceiver.make()
      const capture = Capture.make()
      const values: Array<unknown> = []
      const run = Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const bus = yield* QuoteEvents.QuoteEvents
        const subscription = yield* bus.subscribe
        yield* Effect.forkScoped(Stream.runForEach(subscription, (event) =>
          Effect.sync(() => {
            Capture.record(capture, event)
          })))
        yield* poller.quoteAll(cards, { concurrency: 50 }).pipe(
          Stream.runForEach((item) =>
            Effect.sync(() => {
              const value = item._tag === "Event" ? QuoteEvent.encode(item.event) : item.error
              values.push(value)
              Capture.record(capture, value)
            })
          )
        )
        yield* Effect.sleep("200 millis")
        return yield* Effect.flatMap(
          Telemetry.PrometheusEndpoint,
          ({ url }) => Effect.promise(() => fetch(Option.getOrThrow(url)).then((response) => response.text()))
        )
      })
      const scraped = yield* Effect.scoped(run).pipe(
        Effect.provide(pollerLayer(echoing, {
          client: { retry: { maxAttempts: 6, baseDelay: "20 millis", maxDelay: "200 millis" } },
          journal: QuoteJournal.layerMemory,
          http: Capture.httpClient(capture)
        })),
        Effect.provide(Capture.layer(capture)),
        Effect.provide(
          Telemetry.layer({ endpoint: receiver.url, metricExportInterval: "1 hour", prometheus: { port: 0 } })
        )
      )
      const exported = `${JSON.stringify(receiver.bodies)}\n${scraped}`
      const text = Capture.text(capture)

      const sentinels = [...new Set(cards.map((card) => card.cardNumber))]
      const found = [...Capture.scan(text, sentinels), ...Capture.scan(exported, sentinels)]
      expect(found.map((card) => `${card.slice(0, 6)}…`)).toEqual([])

      // the run met the echo: masked texts, dropped trace ids, failures and successes
      // an error code with the echo masked: the invalid card's, or (when faults ended its quote first) a fault's
      expect(text).toMatch(/(?:exchange\.[a-z.]+|Error) \*\*\*\*\d{4}/)
      expect(text).toContain("SVC-TRACE-ID that does not look like a trace id")
      const tags = new Set(values.map((value) => (value as { readonly _tag: string })._tag))
      expect([...tags]).toEqual(expect.arrayContaining(["Submitted", "Completed", "Failed"]))
      expect(exported).toContain("ExchangeClient.getTransaction")
      const long = [...values.flatMap(strings), ...receiver.spans().flatMap((span) => strings(span.attributes))]
        .filter((value) => value.length > 1024)
      expect(long.map((value) => value.slice(0, 40))).toEqual([])
      console.log(
        `echoing service: ${quotes} quotes, ${values.length} events and refusals, ${capture.lines.length} log ` +
          `lines/renderings, ${capture.spans.length} spans, ${exported.length} characters exported: ` +
          `${found.length} card numbers found`
      )
    }).pipe(Effect.scoped, Effect.runPromise))
})
