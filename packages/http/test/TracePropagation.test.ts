/**
 * Trace propagation: the client turns the platform's per-attempt span off, so
 * it sends the trace context of its own call span (`traceparent` and `b3`),
 * unless propagation is turned off for the call or on the `HttpClient`.
 */
import { describe, expect, it } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import { Capture, TestData } from "@gcx/sandbox"
import { Effect, Layer } from "effect"
import type { HttpClientRequest } from "effect/http"
import { HttpClient, HttpClientResponse } from "effect/http"

const quoteAnswer = {
  transactionId: "1JXX657P9VCKN74WVFNBH75GWR",
  isCompleted: true,
  percentComplete: 100,
  actualCardValue: 50,
  exchangeCardValue: 42.5
}

/** An `HttpClient` that answers the token and quote requests and records every request it sends. */
const capturing = (sent: Array<HttpClientRequest.HttpClientRequest>) =>
  HttpClient.make((request) =>
    Effect.sync(() => {
      sent.push(request)
      const body = request.url.endsWith("/oauth2/token")
        ? { access_token: "token", expires_in: 3600, token_type: "Bearer" }
        : quoteAnswer
      return HttpClientResponse.fromWeb(
        request,
        new Response(JSON.stringify(body), {
          status: request.method === "POST" && !request.url.endsWith("/oauth2/token") ? 201 : 200,
          headers: { "content-type": "application/json" }
        })
      )
    })
  )

const options = {
  baseUrl: "http://api.invalid",
  authUrl: "http://auth.invalid",
  stage: "sandbox",
  clientId: "partner-id",
  clientSecret: "partner-secret",
  apiKey: "partner-key"
}

const card = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}

/** Runs one `createQuote` over `http`; returns the quote requests sent and the call's span. */
const createQuote = (
  http: HttpClient.HttpClient,
  around: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = (effect) => effect
) =>
  Effect.gen(function*() {
    const capture = Capture.make()
    yield* Effect.flatMap(ExchangeClient.ExchangeClient, (client) => around(client.createQuote(card))).pipe(
      Effect.provide(ExchangeClient.layerWith(options).pipe(Layer.provide(Layer.succeed(HttpClient.HttpClient, http)))),
      Effect.provide(Capture.spans(capture))
    )
    const span = capture.spans.find((span) => span.name === "ExchangeClient.createQuote")
    return span === undefined ? yield* Effect.die(new Error("no ExchangeClient.createQuote span")) : span
  })

describe("trace propagation", () => {
  it.live("a request carries the traceparent and b3 of its call's span", () =>
    Effect.gen(function*() {
      const sent: Array<HttpClientRequest.HttpClientRequest> = []
      const span = yield* createQuote(capturing(sent))
      const quote = sent.filter((request) => request.url.endsWith("/v3/exchange/quote"))
      expect(quote).toHaveLength(1)
      expect(quote[0].headers.traceparent).toBe(`00-${span.traceId}-${span.spanId}-01`)
      expect(quote[0].headers.b3).toMatch(new RegExp(`^${span.traceId}-${span.spanId}-1`))
      // the secrets and per-attempt headers are all there too
      expect(quote[0].headers).toMatchObject({
        authorization: "Bearer token",
        "x-api-key": "partner-key",
        previousattempts: "0",
        accept: "application/json"
      })
      expect(quote[0].headers.requestid).toMatch(/^[0-9a-f]{32}$/)
    }))

  it.live("no trace headers when propagation is off for the call", () =>
    Effect.gen(function*() {
      const sent: Array<HttpClientRequest.HttpClientRequest> = []
      yield* createQuote(capturing(sent), Effect.provideService(HttpClient.TracerPropagationEnabled, false))
      const quote = sent.filter((request) => request.url.endsWith("/v3/exchange/quote"))
      expect(quote).toHaveLength(1)
      expect(quote[0].headers.traceparent).toBeUndefined()
      expect(quote[0].headers.b3).toBeUndefined()
    }))

  it.live("no trace headers when the HttpClient given to the layer turns propagation off", () =>
    Effect.gen(function*() {
      const sent: Array<HttpClientRequest.HttpClientRequest> = []
      yield* createQuote(
        capturing(sent).pipe(
          HttpClient.transformResponse(Effect.provideService(HttpClient.TracerPropagationEnabled, false))
        )
      )
      const quote = sent.filter((request) => request.url.endsWith("/v3/exchange/quote"))
      expect(quote).toHaveLength(1)
      expect(quote[0].headers.traceparent).toBeUndefined()
    }))
})
