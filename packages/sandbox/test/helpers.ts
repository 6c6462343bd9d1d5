/** Plain-fetch helpers for the sandbox tests: no SDK, only what a partner would send over HTTP. */
import { expect } from "@effect/vitest"
import { Ids, Routes } from "@gcx/core"
import type { Sandbox } from "@gcx/sandbox"
import { TestData } from "@gcx/sandbox"
import type { Scope } from "effect"
import { Effect } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"

/** An answer, read whole. */
export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Sends a request and reads the whole answer; fails if the connection breaks. */
export const call = (url: string, init?: RequestInit): Effect.Effect<Reply, unknown> =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(url, init)
      const text = await response.text()
      return { status: response.status, headers: response.headers, text, body: parse(text) }
    },
    catch: (error) => error
  })

/**
 * Sends a request with its path exactly as written: `fetch` would normalize
 * some spellings (`//`) and sets `Host` itself; node:http sends the path and
 * the headers (a `host` among them) as written.
 */
export const rawRequest = (
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string
): Effect.Effect<Reply, Error> =>
  Effect.callback<Reply, Error>((resume) => {
    const request = Http.request(`${baseUrl}/`, { method, path, headers, agent: false }, (response) => {
      let text = ""
      response.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk
      }).on("end", () => {
        const fetchHeaders = new Headers()
        for (const [name, value] of Object.entries(response.headers)) {
          if (typeof value === "string") fetchHeaders.set(name, value)
        }
        resume(Effect.succeed({ status: response.statusCode!, headers: fetchHeaders, text, body: parse(text) }))
      })
    })
    request.on("error", (error) => resume(Effect.fail(error)))
    request.end(body)
  })

/** A port of 127.0.0.1 that a plain TCP server holds for the life of the scope. */
export const takenPort: Effect.Effect<number, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(
    Effect.callback<Net.Server>((resume) => {
      const server = Net.createServer()
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  ),
  (server) => (server.address() as Net.AddressInfo).port
)

/** Basic credentials as RFC 6749 2.3.1 encodes them. */
export const basic = (clientId: string, clientSecret: string): string =>
  `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString("base64")}`

/** POSTs a token form. */
export const tokenRequest = (
  server: Sandbox.Service,
  form: Record<string, string>,
  headers: Record<string, string> = {}
): Effect.Effect<Reply, unknown> =>
  call(`${server.authUrl}${Routes.tokenPath}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", ...headers },
    body: new URLSearchParams(form).toString()
  })

/** The token form with the partner's secret in it. */
export const credentialsForm = (partner: TestData.Partner = TestData.partner): Record<string, string> => ({
  grant_type: "client_credentials",
  client_id: partner.clientId,
  client_secret: partner.clientSecret
})

/** A fresh access token for the partner (secret in the form). */
export const tokenFor = (
  server: Sandbox.Service,
  partner: TestData.Partner = TestData.partner
): Effect.Effect<string, unknown> =>
  tokenRequest(server, credentialsForm(partner)).pipe(
    Effect.filterOrElse((reply) => reply.status === 200, () => Effect.die(new Error("token request failed"))),
    Effect.map((reply) => reply.body.access_token as string)
  )

/** The headers of an exchange call. */
export const exchangeHeaders = (
  token: string,
  options: {
    readonly partner?: TestData.Partner
    readonly requestId?: string
    readonly previousAttempts?: number
  } = {}
): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  "x-api-key": (options.partner ?? TestData.partner).apiKey,
  requestId: options.requestId ?? Ids.makeRequestId(),
  ...(options.previousAttempts === undefined ? {} : { previousAttempts: String(options.previousAttempts) }),
  "content-type": "application/json"
})

/** A QuoteRequest body. */
export const quoteBody = (
  cardNumber: string,
  options: { readonly pin?: string; readonly productLineId?: string } = {}
): string =>
  JSON.stringify({
    card: {
      cardNumber,
      pinNumber: options.pin ?? TestData.pin,
      productLineId: options.productLineId ?? TestData.defaultProductLineId
    }
  })

/** POSTs a quote (with the stage segment unless `staged` is false). */
export const postQuote = (
  server: Sandbox.Service,
  headers: Record<string, string>,
  body: string,
  options: { readonly staged?: boolean } = {}
): Effect.Effect<Reply, unknown> =>
  call(`${server.baseUrl}${Routes.quotePath(options.staged === false ? undefined : server.stage)}`, {
    method: "POST",
    headers,
    body
  })

/** GETs a transaction (with the stage segment unless `staged` is false). */
export const getTransaction = (
  server: Sandbox.Service,
  headers: Record<string, string>,
  transactionId: string,
  options: { readonly staged?: boolean } = {}
): Effect.Effect<Reply, unknown> =>
  call(
    `${server.baseUrl}${Routes.transactionPath(transactionId, options.staged === false ? undefined : server.stage)}`,
    { headers }
  )

/** Repeats a request every 5 ms until the answer satisfies the predicate (at most ~5 s), and returns that answer. */
export const pollUntil = (
  request: Effect.Effect<Reply, unknown>,
  done: (reply: Reply) => boolean
): Effect.Effect<Reply, unknown> =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 1_000; attempt++) {
      const reply = yield* request
      if (done(reply)) return reply
      yield* Effect.sleep("5 millis")
    }
    return yield* Effect.die(new Error("pollUntil: the answer never came"))
  })

/** Calls the admin API with the server's admin key. */
export const admin = (
  server: Sandbox.Service,
  method: string,
  path: string,
  body?: unknown
): Effect.Effect<Reply, unknown> =>
  call(`${server.baseUrl}/__sandbox${path}`, {
    method,
    headers: { "x-admin-key": server.adminKey, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** Expects every answer to be an Error body with the status and code. */
export const expectError = (replies: ReadonlyArray<Reply>, status: number, errorCode: string): void => {
  for (const reply of replies) {
    expect(reply.status).toBe(status)
    expect(reply.body.ErrorCode).toBe(errorCode)
  }
}
