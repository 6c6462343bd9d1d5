/**
 * Sentinel scan: plant sentinel credentials and card data, capture every log
 * line (all levels) and every span (name, attributes, events, links, exit) of
 * a run against a real sandbox, including the sandbox's own, plus every result
 * and error handed back, and find none of the sentinels.
 */
import { describe, expect, it } from "@effect/vitest"
import { ExchangeClient, TokenProvider } from "@gcx/http"
import { Capture, Sandbox, TestData } from "@gcx/sandbox"
import { Cause, Effect, Exit, Layer, Option, Redacted, References } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { optionsFor, pollUntilDone, sandbox } from "./fixtures.js"

const partner: TestData.Partner = {
  clientId: "sentinel-partner",
  clientSecret: "SENTINEL-SECRET-q7Zp3RkT",
  apiKey: "SENTINEL-APIKEY-x9WkL2vD",
  creatorId: 4242
}
const wrongSecret = "SENTINEL-WRONGSECRET-m4Hq8"
const wrongApiKey = "SENTINEL-WRONGKEY-c3Jn6"
const pin = "SENTINEL-PIN-r5Tb"
const cards = [
  TestData.Cards.success,
  TestData.Cards.invalid,
  TestData.Cards.merchantUnavailable,
  // not in the scenario table: succeeds with a derived balance
  "6006123456789012"
]

/** The quote calls of the run: successes, card outcomes, retried faults and refusals. */
const run = (server: Sandbox.Service) =>
  Effect.gen(function*() {
    const exchange = yield* ExchangeClient.ExchangeClient
    const outcomes: Array<Exit.Exit<unknown, unknown>> = []
    const keep = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.exit(effect).pipe(Effect.tap((exit) => Effect.sync(() => outcomes.push(exit))))

    yield* keep(exchange.heartbeat)
    yield* server.setFaults([
      { route: "createQuote", kind: "status503", sequence: [true], retryAfterSeconds: 0 },
      { route: "createQuote", kind: "reset", sequence: [false, true] },
      { route: "createQuote", kind: "dropAnswer", sequence: [false, false, false, true] },
      { route: "getTransaction", kind: "malformed", sequence: [true] }
    ])
    for (const cardNumber of cards) {
      const created = yield* keep(exchange.createQuote({ cardNumber, pinNumber: pin, productLineId: "1000" }))
      if (Exit.isSuccess(created)) yield* keep(pollUntilDone(created.value.transactionId))
    }
    yield* server.setFaults([])
    // refused before any I/O, with card data in the refused input
    yield* keep(
      exchange.createQuote({
        cardNumber: `${TestData.Cards.success}${"9".repeat(60)}`,
        pinNumber: pin,
        productLineId: "1000"
      })
    )
    yield* keep(exchange.createQuote({ cardNumber: TestData.Cards.success, pinNumber: "", productLineId: "1000" }))
    // refused by the service
    yield* keep(
      Effect.flatMap(ExchangeClient.ExchangeClient, (client) =>
        client.createQuote({ cardNumber: TestData.Cards.success, pinNumber: pin, productLineId: "1000" })).pipe(
          Effect.provide(clientLayer(server, { apiKey: wrongApiKey }))
        )
    )
    yield* keep(
      Effect.flatMap(ExchangeClient.ExchangeClient, (client) =>
        client.heartbeat).pipe(
          Effect.provide(clientLayer(server, { clientSecret: wrongSecret, authStyle: "basic" }))
        )
    )
    const token = yield* Effect.flatMap(TokenProvider.TokenProvider, (tokens) => tokens.get)
    return { outcomes, token: Redacted.value(token) }
  })

const clientLayer = (server: Sandbox.Service, overrides: Parameters<typeof optionsFor>[1] = {}) =>
  ExchangeClient.layerWith(optionsFor(server, {
    clientId: partner.clientId,
    clientSecret: partner.clientSecret,
    apiKey: partner.apiKey,
    retry: { maxAttempts: 4, baseDelay: "5 millis" },
    ...overrides
  })).pipe(Layer.provide(FetchHttpClient.layer), Layer.orDie)

describe("sentinel scan", () => {
  it.live("no secret, token or card data in any log line, span, result or error", () =>
    Effect.gen(function*() {
      const capture = Capture.make()
      const { outcomes, token } = yield* Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        return yield* run(server).pipe(Effect.provide(clientLayer(server)))
      }).pipe(
        Effect.provide(
          sandbox({ timeScale: 0.01, partners: [partner], logLevel: "Debug" }).pipe(
            Layer.provide(Layer.succeed(References.MinimumLogLevel, "All"))
          )
        ),
        Effect.provide(Capture.layer(capture)),
        // Effect 4 records no header on the platform's spans unless asked: record them all, and find them redacted
        Effect.provideService(HttpClient.TracerHeaderFilter, () => true)
      )

      const text = [
        Capture.text(capture),
        ...outcomes.map((outcome) => Capture.show(outcome)),
        ...outcomes.map((outcome) =>
          JSON.stringify(outcome, (_, value) => typeof value === "bigint" ? `${value}` : value)
        )
      ].join("\n")

      // the run went through every path: successes, card outcomes, a cut body, local and remote refusals
      const tags = outcomes.map((outcome) =>
        Exit.match(outcome as Exit.Exit<unknown, { readonly _tag: string }>, {
          onFailure: (cause) =>
            Cause.findErrorOption(cause).pipe(Option.match({ onNone: () => "defect", onSome: (error) => error._tag })),
          onSuccess: () => "ok"
        })
      )
      for (
        const tag of [
          "ok",
          "UnexpectedResponse",
          "InvalidCard",
          "MerchantUnavailable",
          "InvalidCardInput",
          "InvalidApiKey",
          "TokenError"
        ]
      ) {
        expect(tags).toContain(tag)
      }
      expect(tags).not.toContain("defect")
      // the capture saw the run, the sandbox's side included
      const names = new Set(capture.spans.map((span) => span.name))
      for (
        const name of [
          "ExchangeClient.heartbeat",
          "ExchangeClient.createQuote",
          "ExchangeClient.getTransaction",
          "TokenProvider.fetchToken",
          // the token request keeps the platform's span (Effect 4 names it by the method, as OpenTelemetry's
          // convention asks: "POST", was "http.client POST"); exchange calls have one span per call instead
          "POST"
        ]
      ) {
        expect(names, name).toContain(name)
      }
      expect(capture.lines.some((line) => line.includes("retrying createQuote"))).toBe(true)
      // the platform records the request headers on its spans (when asked), redacted (the Basic token request here)
      const httpSpans = capture.spans.filter((span) =>
        span.kind === "client" && span.attributes.has("http.request.header.authorization")
      )
      expect(httpSpans.length).toBeGreaterThan(0)
      for (const span of httpSpans) {
        expect(String(span.attributes.get("http.request.header.authorization"))).toBe("<redacted>")
      }

      const sentinels = [
        partner.clientSecret,
        partner.apiKey,
        wrongSecret,
        wrongApiKey,
        pin,
        token,
        token.split(".")[2]!,
        Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString("base64"),
        ...cards,
        ...cards.map((number) => number.slice(0, 12))
      ]
      expect(token.length).toBeGreaterThan(20)
      for (const sentinel of sentinels) {
        expect(text.includes(sentinel), `found a sentinel (${sentinel.slice(0, 4)}…) in the capture`).toBe(false)
      }
    }), 30_000)
})
