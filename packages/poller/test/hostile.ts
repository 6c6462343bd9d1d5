/**
 * Hostile and broken servers for the hardening tests: small `node:http`
 * servers on loopback that answer the way the sandbox cannot (redirects, huge
 * bodies, odd hints, bad token lifetimes), record every request they get, and
 * the client and poller layers over either transport.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Routes } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import type { ExchangeConfig } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import type { HttpClient } from "effect/http"
import * as Http from "node:http"
import type * as Net from "node:net"
import { QuoteEvents, QuoteJournal, QuotePoller } from "../src/index.js"

/** A request a hostile server received. */
export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** How a hostile server answers: the request it received, and the node response to write. */
export type Handler = (request: Received, response: Http.ServerResponse) => void

/** A running hostile server. */
export interface Hostile {
  readonly url: string
  /** Every request received so far, oldest first. */
  readonly requests: ReadonlyArray<Received>
}

/** A node:http server on 127.0.0.1 and a free port, closed with the scope. */
export const server = (handler: Handler) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: Http.Server; readonly hostile: Hostile }>((resume) => {
      const requests: Array<Received> = []
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const received: Received = {
            method: request.method ?? "",
            url: request.url ?? "",
            headers: request.headers,
            body: Buffer.concat(chunks).toString("utf8")
          }
          requests.push(received)
          handler(received, response)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as Net.AddressInfo).port
        resume(Effect.succeed({ server, hostile: { url: `http://127.0.0.1:${port}`, requests } }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ hostile }) => hostile))

/** The transaction id every hostile service uses. */
export const transactionId = "1JXX657P9VCKN74WVFNBH75GWR"

/** A quote as the POST answers it: not completed, with its hints. */
export const pendingQuote = {
  transactionId,
  isCompleted: false,
  percentComplete: 0,
  responseTimestamp: "2026-11-21T10:00:00.000Z",
  expectedCompletionTime: 0
}

/** A completed quote. */
export const completedQuote = {
  transactionId,
  isCompleted: true,
  percentComplete: 100,
  actualCardValue: 100.5,
  exchangeCardValue: 85.43,
  responseTimestamp: "2026-11-21T10:00:02.000Z",
  expectedCompletionTime: 0
}

/** A transaction status around a quote. */
export const status = (response: Record<string, unknown>) => ({
  entityid: transactionId,
  createdTimestamp: "2026-11-21T10:00:00.000Z",
  percentComplete: response.isCompleted === true ? 100 : 0,
  steps: [],
  response
})

/** A token answer. */
export const tokenAnswer = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({ access_token: "hostile-token", expires_in: 3600, token_type: "Bearer", ...fields })

/** Writes a JSON answer. */
export const json = (response: Http.ServerResponse, status: number, body: unknown, headers = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(typeof body === "string" ? body : JSON.stringify(body))
}

/** Which route of the service a request is for. */
export const routeOf = (request: Received): "token" | "createQuote" | "getTransaction" | "heartbeat" | "other" =>
  request.url === Routes.tokenPath
    ? "token"
    : request.method === "POST" && request.url === Routes.quotePath()
    ? "createQuote"
    : request.method === "GET" && request.url.startsWith(`${Routes.quotePath()}/`)
    ? "getTransaction"
    : request.url === Routes.heartbeatPath
    ? "heartbeat"
    : "other"

/**
 * A well-behaved service (tokens, a 201 pending quote, a completed GET), but
 * for the routes `overrides` answers itself.
 */
export const service = (
  overrides: Partial<Record<ReturnType<typeof routeOf>, Handler>> = {}
): Handler =>
(request, response) => {
  const route = routeOf(request)
  const override = overrides[route]
  if (override !== undefined) return override(request, response)
  switch (route) {
    case "token":
      return json(response, 200, tokenAnswer())
    case "createQuote":
      return json(response, 201, pendingQuote, { location: Routes.transactionPath(transactionId) })
    case "getTransaction":
      return json(response, 200, status(completedQuote))
    case "heartbeat":
      return json(response, 200, {})
    case "other":
      return json(response, 404, { ErrorCode: "not.found" })
  }
}

/** The requests of one route. */
export const requestsOf = (hostile: Hostile, route: ReturnType<typeof routeOf>) =>
  hostile.requests.filter((request) => routeOf(request) === route)

/** The transports gcx supports: its own undici client (the Node default), and Effect's two. */
export const transports: ReadonlyArray<readonly [string, Layer.Layer<HttpClient.HttpClient>]> = [
  ["UndiciClient", UndiciClient.layer],
  ["FetchHttpClient", FetchHttpClient.layer],
  ["NodeHttpClient.layerUndici", NodeHttpClient.layerUndici]
]

/** Client options for a hostile service (both URLs on it, no stage), with fast retries. */
export const optionsFor = (url: string, overrides: Partial<ExchangeConfig.Options> = {}): ExchangeConfig.Options => ({
  baseUrl: url,
  authUrl: url,
  stage: "",
  clientId: "hostile-partner",
  clientSecret: "hostile-secret",
  apiKey: "hostile-api-key",
  requestTimeout: "5 seconds",
  retry: { maxAttempts: 4, baseDelay: "5 millis", maxDelay: "1 second", budget: { capacity: 100 } },
  ...overrides
})

/** The client for a hostile service over a transport. */
export const clientLayer = (
  options: ExchangeConfig.Options,
  http: Layer.Layer<HttpClient.HttpClient> = FetchHttpClient.layer
) => ExchangeClient.layerWith(options).pipe(Layer.provide(http), Layer.orDie)

/** The poller, its bus and a memory journal over a client for a hostile service. */
export const pollerLayer = (
  options: ExchangeConfig.Options,
  http: Layer.Layer<HttpClient.HttpClient> = FetchHttpClient.layer,
  poller: QuotePoller.Options = {}
) =>
  QuotePoller.layer(poller).pipe(
    Layer.provideMerge(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerMemory)),
    Layer.provideMerge(clientLayer(options, http))
  )

/** The card every hostile test quotes. */
export const card = { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" }
