/**
 * Chaos: quotes through the poller (`quoteAll`) against a sandbox process that
 * injects 20 % 503, 5 % 500, 5 % connection resets, 3 % processed-but-dropped
 * POST answers and 2 % two-second stalls, with tokens expiring every 2 s.
 * Every quote must end with exactly one outcome, no transaction may be lost or
 * duplicated (the sandbox's journal and transactions, over its admin API), and
 * token requests stay within one per expiry window plus retries. A POST that
 * fails past its attempts is resumed as the docs say, with its requestId and
 * attempts: a `201` dropped and then failures to the cap (about 1 quote in
 * 60,000 at these rates) leave a transaction that only the resume learns.
 *
 * Secrets: the same run is captured whole (every log line at every level,
 * every span, every event of the quote streams and of the bus, every error in
 * several renderings) and scanned for the partner's client secret and API
 * key, every access token the client sent, every PIN and every full card
 * number: none may appear. The run also exports its telemetry
 * (`@gcx/http/Telemetry`) to a receiver on loopback and serves a Prometheus
 * scrape: everything exported (span attributes, metric labels, the scrape
 * text) is scanned too.
 *
 * Size: 1,000 quotes; 200 when CI=true.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { Errors } from "@gcx/core"
import { QuoteEvent } from "@gcx/core"
import * as Telemetry from "@gcx/http/Telemetry"
import type { QuotePoller as QuotePollerNs } from "@gcx/poller"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import type { TestData } from "@gcx/sandbox"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Effect, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import * as Admin from "../internal/Admin.js"
import { pollerLayer } from "../internal/gcx.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import * as Capture from "./capture.js"
import * as Chaos from "./chaos.js"

const quotes = process.env.CI === "true" ? 200 : 1_000
const concurrency = 100
const tokenLifetimeSeconds = 2

const sentinel = (label: string) => `SENTINEL-${label}-${randomBytes(6).toString("hex")}`

/** The partner of the run: its secret and API key are sentinels to scan for. */
const partner: TestData.Partner = {
  clientId: "chaos-partner",
  clientSecret: sentinel("SECRET"),
  apiKey: sentinel("APIKEY"),
  creatorId: 7001
}

const cards = Chaos.cards(quotes)

const quoteAll = (capture: Capture.Capture) =>
  Effect.gen(function*() {
    const poller = yield* QuotePoller.QuotePoller
    const bus = yield* QuoteEvents.QuoteEvents
    const journal = yield* QuoteJournal.QuoteJournal
    let busEvents = 0
    const subscription = yield* bus.subscribe
    yield* Effect.forkScoped(Stream.runForEach(subscription, (event) =>
      Effect.sync(() => {
        busEvents++
        Capture.record(capture, event)
      })))
    const seen: Array<Chaos.Seen> = cards.map(Chaos.unseen)
    const observed = (quote: Chaos.Seen, event: QuoteEvent.QuoteEvent) => {
      quote.events.push(event)
      Capture.record(capture, QuoteEvent.encode(event))
    }
    const refused = (quote: Chaos.Seen, error: Errors.QuoteFailure) => {
      quote.rejections.push(error)
      Capture.record(capture, error)
    }
    yield* poller.quoteAll(cards, { concurrency }).pipe(
      Stream.runForEach((item: QuotePollerNs.BatchEvent) =>
        Effect.sync(() =>
          item._tag === "Event" ? observed(seen[item.index]!, item.event) : refused(seen[item.index]!, item.error)
        )
      )
    )
    // A POST that failed at its attempts cap may have created its transaction (a 201 dropped, then
    // failures to the cap): resumed as the docs say, with its requestId and attempts, up to 3 times.
    for (let pass = 0; pass < 3; pass++) {
      const resumes = seen.flatMap((quote, index) => {
        const resume = quote.rejections.length > quote.resumes
          ? Chaos.resumeOf(quote.rejections.at(-1)!, quote.resumes)
          : undefined
        return resume === undefined ? [] : [{ quote, card: cards[index]!, resume }]
      })
      if (resumes.length === 0) break
      yield* Effect.forEach(resumes, ({ card, quote, resume }) => {
        quote.resumes++
        return poller.quote(card, resume).pipe(
          Stream.runForEach((event) => Effect.sync(() => observed(quote, event))),
          Effect.catch((error) => Effect.sync(() => refused(quote, error)))
        )
      }, { concurrency, discard: true })
    }
    // let the bus subscriber catch up
    yield* Effect.sleep("500 millis")
    return { seen, busEvents, journalLeft: (yield* journal.entries).length }
  }).pipe(Effect.scoped)

let sandbox: SandboxProcess.SandboxProcess | undefined
let run: Chaos.Run | undefined

const settings: Chaos.Settings = {
  quotes,
  concurrency,
  clientId: partner.clientId,
  tokenLifetimeSeconds,
  client: Chaos.clientSettings
}
const figures = (run: Chaos.Run) => Chaos.figures(run, settings)

describe(`chaos: ${quotes} quotes under faults, tokens expiring every ${tokenLifetimeSeconds} s`, () => {
  beforeAll(async () => {
    sandbox = await SandboxProcess.start([{ partners: [partner], tokenLifetimeSeconds, seed: 7, faults: Chaos.faults }])
    const capture = Capture.make()
    const started = performance.now()
    const { client, exported, metrics, seconds } = await Effect.runPromise(
      Effect.gen(function*() {
        const receiver = yield* OtlpReceiver.make()
        const scrape = Effect.flatMap(
          Telemetry.PrometheusEndpoint,
          ({ url }) => Effect.promise(() => fetch(Option.getOrThrow(url)).then((response) => response.text()))
        )
        const [client, scraped] = yield* Effect.zip(quoteAll(capture), scrape).pipe(
          Effect.provide(pollerLayer(sandbox!.endpoint, {
            client: {
              clientId: partner.clientId,
              clientSecret: partner.clientSecret,
              apiKey: partner.apiKey,
              ...Chaos.clientSettings
            },
            journal: QuoteJournal.layerMemory,
            bus: { capacity: 1_000_000 },
            http: Capture.httpClient(capture)
          })),
          Effect.provide(Capture.layer(capture)),
          // outermost, so that the capture's tracer wraps the exporting one; closing it flushes the export
          // (metrics once, at the end: the receiver keeps every body, and the scan reads them all)
          Effect.provide(
            Telemetry.layer({ endpoint: receiver.url, metricExportInterval: "1 hour", prometheus: { port: 0 } })
          )
        )
        const seconds = (performance.now() - started) / 1000
        return {
          client,
          seconds,
          exported: `${JSON.stringify(receiver.bodies)}\n${scraped}`,
          metrics: receiver.metrics()
        }
      }).pipe(Effect.scoped)
    )
    run = {
      ...client,
      seconds,
      capture,
      exported,
      metrics,
      transactions: await Admin.transactions(sandbox.endpoint),
      journal: await Admin.journal(sandbox.endpoint)
    }
    console.log(`chaos figures:\n${JSON.stringify(figures(run), null, 2)}`)
  })

  afterAll(async () => {
    await sandbox?.stop()
  })

  it("every quote ends with exactly one outcome: one terminal event, or the refusal of its POST", () => {
    for (const [index, quote] of run!.seen.entries()) {
      const terminals = quote.events.filter(QuoteEvent.isTerminal)
      // every refusal but the last was resumed, and could be: a POST that failed at the attempts cap
      const resumed = quote.rejections.slice(0, quote.resumes)
      expect(resumed.length, `quote ${index}: resumes`).toBe(quote.resumes)
      expect(resumed.filter((error, pass) => Chaos.resumeOf(error, pass) === undefined), `quote ${index}`).toEqual([])
      if (quote.rejections.length > quote.resumes) {
        // only the POST's own retries, shown before it was refused
        expect(
          quote.events.filter((event) => event._tag !== "Retrying" || event.transactionId !== ""),
          `quote ${index}: no event after a refused POST`
        ).toEqual([])
        expect(quote.rejections.length, `quote ${index}`).toBe(quote.resumes + 1)
      } else {
        expect(terminals.length, `quote ${index}: terminal events`).toBe(1)
        expect(QuoteEvent.isTerminal(quote.events.at(-1)!), `quote ${index}: the terminal event is the last`).toBe(true)
        expect(quote.events.filter((event) => event._tag === "Submitted").length).toBe(1)
      }
    }
  })

  it("zero transactions lost: every transaction the sandbox created is known to the client", () => {
    expect(figures(run!).lost).toEqual([])
  })

  it("zero duplicate transactions per requestId", () => {
    const ours = run!.transactions.filter((transaction) => transaction.clientId === partner.clientId)
    expect(Object.values(run!.journal.transactionsByRequestId).filter((ids) => ids.length > 1)).toEqual([])
    expect(new Set(ours.map((transaction) => transaction.requestId)).size).toBe(ours.length)
  })

  it("token requests: one per refresh interval plus retries (printed against one per expiry window)", () => {
    const { tokens } = figures(run!)
    expect(run!.journal.entries.length).toBe(Object.values(run!.journal.requests).reduce((a, b) => a + b, 0))
    console.log(
      `tokens: ${tokens.requests} requests (${tokens.failed} failed) in ${tokens.expiryWindows} expiry windows of ` +
        `${tokenLifetimeSeconds} s: one per expiry window plus retries allows ${tokens.onePerExpiryWindowPlusRetries}; ` +
        `the provider refreshes every ${tokens.refreshIntervalSeconds} s (lifetime - refreshMargin), which allows ` +
        `${tokens.onePerRefreshIntervalPlusRetries}`
    )
    expect(tokens.requests).toBeLessThanOrEqual(tokens.onePerRefreshIntervalPlusRetries)
  })

  it("metric labels carry no requestId or transaction id; the exported counts match the run", () => {
    const { metrics, transactions } = run!
    const ids = new Set(transactions.flatMap((transaction) => [transaction.requestId, transaction.transactionId]))
    const labels = metrics.flatMap((point) => Object.values(point.attributes).map(String))
    expect(labels.filter((label) => ids.has(label))).toEqual([])
    const { accepted, outcomes } = figures(run!)
    // a resumed POST is a quote submitted again
    expect(OtlpReceiver.valueOf(metrics, "gcx.quotes.submitted")).toBe(quotes + figures(run!).resumedPosts)
    expect(OtlpReceiver.valueOf(metrics, "gcx.quotes.outcomes", { outcome: "Completed" })).toBe(outcomes.Completed ?? 0)
    expect(OtlpReceiver.valueOf(metrics, "gcx.quotes.in_flight")).toBe(0)
    expect(OtlpReceiver.valueOf(metrics, "http.client.request.duration", { "gcx.operation": "createQuote" }))
      .toBeGreaterThanOrEqual(accepted)
  })

  it("no client secret, API key, access token, PIN or full card number in any log, event, error or span", () => {
    const { capture } = run!
    const text = Capture.text(capture)
    // the capture really holds the run
    expect(capture.spans.length).toBeGreaterThan(quotes)
    expect(capture.lines.some((line) => line.includes("retrying"))).toBe(true)
    expect(capture.tokens.size).toBeGreaterThan(1)
    const sentinels = [
      partner.clientSecret,
      partner.apiKey,
      Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString("base64"),
      ...capture.tokens,
      ...[...capture.tokens].map((token) => token.split(".")[2]!),
      ...new Set(cards.map((card) => card.cardNumber)),
      ...cards.map((card) => card.pinNumber)
    ]
    const found = Capture.scan(text, sentinels)
    expect(found.map((sentinel) => `${sentinel.slice(0, 6)}…`)).toEqual([])
    expect(Capture.jwtShape.test(text)).toBe(false)
    // everything exported: span attributes and metric labels over OTLP, and the scrape text
    const { exported } = run!
    expect(exported).toContain("ExchangeClient.createQuote")
    expect(exported).toContain("gcx_quotes_outcomes_total{outcome=\"Completed\"}")
    expect(exported).toContain("gcx.retries")
    const foundExported = Capture.scan(exported, sentinels)
    expect(foundExported.map((sentinel) => `${sentinel.slice(0, 6)}…`)).toEqual([])
    expect(Capture.jwtShape.test(exported)).toBe(false)
    console.log(
      `secrets scan: ${sentinels.length} sentinels (${capture.tokens.size} access tokens), ` +
        `${capture.lines.length} log lines/renderings, ${capture.spans.length} spans, ${text.length} characters, ` +
        `and ${exported.length} characters exported (OTLP and the Prometheus scrape): ` +
        `${found.length + foundExported.length} found`
    )
  })
})
