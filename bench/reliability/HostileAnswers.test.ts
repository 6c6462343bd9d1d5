/**
 * Fuzz, hostile servers (issue 15): two generators through the real client
 * over `FetchHttpClient`, against local node:http servers.
 * - Service answers: redirects with any `Location`, bodies past the 1 MiB
 *   cap (chunked or with a content-length) and answers whose optional hints
 *   are unreadable. A redirect is an `UnexpectedResponse` (a `TokenError` on
 *   the token route) and no request reaches the `Location`'s host; a body past
 *   the cap is an `UnexpectedResponse`; a bad hint still gives the quote.
 * - Token answers with bad lifetimes and tokens: a `TokenError`, unless the
 *   lifetime is a finite positive number and the token a non-empty run of
 *   visible ASCII, when the call succeeds.
 * Never a defect, never a hang.
 */
import { describe, expect, it } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import { Cause, Context, Effect, Exit, Layer, References } from "effect"
import * as fc from "fast-check"
import type * as Http from "node:http"
import { clientLayer } from "../internal/gcx.js"
import { listen } from "./loopback.js"

const seed = 20_261_123
const transactionId = "1JXX657P9VCKN74WVFNBH75GWR"
const quote = { transactionId, isCompleted: true, actualCardValue: 10, exchangeCardValue: 8.5 }
const tokenBody = { access_token: "fuzz-token", expires_in: 3600, token_type: "Bearer" }

/** How one call ended. */
const outcomeOf = (exit: Exit.Exit<unknown, { readonly _tag: string; readonly reason?: unknown }>): string =>
  Exit.match(exit, {
    onSuccess: () => "success",
    onFailure: (cause) => {
      const failures = cause.reasons.filter(Cause.isFailReason).map((reason) => reason.error)
      if (failures.length !== 1 || Cause.hasDies(cause)) return "defect"
      const error = failures[0]!
      return typeof error.reason === "string" && error._tag === "UnexpectedResponse"
        ? `fail:${error._tag}:${error.reason}`
        : `fail:${error._tag}`
    }
  })

const client = (url: string, clientId = "fuzz-partner") =>
  Layer.build(clientLayer({ baseUrl: url, authUrl: url, stage: "", adminKey: "" }, {
    clientId,
    clientSecret: "fuzz-secret",
    apiKey: "fuzz-key",
    requestTimeout: "5 seconds",
    retry: { maxAttempts: 1 }
  })).pipe(Effect.map(Context.get(ExchangeClient.ExchangeClient)))

/** One hostile service answer, and what it must end in. */
type ServiceCase =
  | {
    readonly _tag: "Redirect"
    readonly route: "token" | "post" | "get"
    readonly status: number
    readonly location: string
  }
  | { readonly _tag: "Huge"; readonly route: "post" | "get"; readonly bytes: number; readonly chunked: boolean }
  | { readonly _tag: "BadHint"; readonly route: "post" | "get"; readonly field: string; readonly raw: string }

const serviceCases: fc.Arbitrary<ServiceCase> = fc.oneof(
  fc.record({
    _tag: fc.constant("Redirect" as const),
    route: fc.constantFrom("token" as const, "post" as const, "get" as const),
    status: fc.integer({ min: 300, max: 399 }),
    location: fc.oneof(fc.constant("ELSEWHERE"), fc.webUrl(), fc.string({ maxLength: 300 }))
  }),
  fc.record({
    _tag: fc.constant("Huge" as const),
    route: fc.constantFrom("post" as const, "get" as const),
    bytes: fc.integer({ min: 1_048_577, max: 4_000_000 }),
    chunked: fc.boolean()
  }),
  fc.record({
    _tag: fc.constant("BadHint" as const),
    route: fc.constantFrom("post" as const, "get" as const),
    field: fc.constantFrom("expectedCompletionTime", "percentComplete", "responseTimestamp"),
    raw: fc.oneof(
      fc.constantFrom("\"NaN\"", "1e400", "-1e400", "\"\"", "true", "[]", "{}", "\"yesterday\""),
      fc.string({ maxLength: 30 }).map((text) => JSON.stringify(text))
    )
  })
)

const expected = (sample: ServiceCase): ReadonlyArray<string> => {
  switch (sample._tag) {
    case "Redirect":
      return [sample.route === "token" ? "fail:TokenError" : "fail:UnexpectedResponse:Redirect"]
    case "Huge":
      return ["fail:UnexpectedResponse:TooLarge"]
    case "BadHint":
      // a string that happens to be a valid timestamp is read; either way the quote goes on
      return ["success"]
  }
}

const answerService = (sample: ServiceCase, elsewhere: string, response: Http.ServerResponse, route: string) => {
  if (sample._tag === "Redirect" && sample.route === route) {
    const location = sample.location === "ELSEWHERE" ? `${elsewhere}/x` : sample.location
    response.writeHead(sample.status, /^[\t\x20-\x7e]*$/.test(location) ? { location } : {})
    return response.end()
  }
  if (sample._tag === "Huge" && sample.route === route) {
    response.writeHead(200, sample.chunked ? {} : { "content-length": String(sample.bytes) })
    return response.end(Buffer.alloc(sample.bytes, "x"))
  }
  if (route === "token") {
    response.writeHead(200, { "content-type": "application/json" })
    return response.end(JSON.stringify(tokenBody))
  }
  const hinted = sample._tag === "BadHint" && sample.route === route
    ? JSON.stringify({ ...quote, [sample.field]: "__RAW__" }).replace("\"__RAW__\"", sample.raw)
    : JSON.stringify(quote)
  response.writeHead(route === "post" ? 201 : 200, { "content-type": "application/json" })
  response.end(route === "post" ? hinted : `{"response":${hinted}}`)
}

describe("fuzz: hostile service answers (redirects, oversized bodies, bad hints)", () => {
  it.live(
    "each ends in its documented error, or a quote for a bad hint; nothing reaches another host",
    () =>
      Effect.gen(function*() {
        const samples = fc.sample(serviceCases, { numRuns: 300, seed })
        let reachedElsewhere = 0
        const elsewhere = yield* listen((_, __, response) => {
          reachedElsewhere += 1
          response.end("{}")
        })
        const outcomes: Array<
          { readonly index: number; readonly outcome: string; readonly wanted: ReadonlyArray<string> }
        > = []
        for (const [index, sample] of samples.entries()) {
          const outcome = yield* Effect.scoped(Effect.gen(function*() {
            const url = yield* listen((request, _, response) =>
              answerService(
                sample,
                elsewhere,
                response,
                request.url === "/oauth2/token" ? "token" : request.method === "POST" ? "post" : "get"
              )
            )
            const exchange = yield* client(url)
            const call: Effect.Effect<unknown, { readonly _tag: string }> = sample.route === "post"
              ? exchange.createQuote({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" })
              : exchange.getTransaction(transactionId)
            return outcomeOf(yield* Effect.exit(call))
          }))
          outcomes.push({ index, outcome, wanted: expected(sample) })
        }
        const counts: Record<string, number> = {}
        for (const { outcome } of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1
        console.log(`hostile-answer fuzz: ${samples.length} answers (seed ${seed}): ${JSON.stringify(counts)}`)
        expect(
          outcomes.filter(({ outcome, wanted }) => !wanted.includes(outcome)).map((wrong) => ({
            ...wrong,
            sample: samples[wrong.index]
          }))
        ).toEqual([])
        expect(reachedElsewhere).toBe(0)
      }).pipe(Effect.scoped, Effect.provideService(References.MinimumLogLevel, "Error")),
    300_000
  )
})

/** A token answer: `expires_in` and `access_token` of any kind, or left out. */
const tokenAnswers = fc.record({
  expires_in: fc.oneof(
    fc.constantFrom(0, -1, -0.5, 1e-9, 0.001, 3600, 1e308, "NaN", "3600", null, true),
    fc.double(),
    fc.constant(undefined)
  ),
  access_token: fc.oneof(
    fc.constantFrom("", " ", "a b", "a\r\nb", "token", "x".repeat(20_000), 42, null),
    fc.string({ maxLength: 40 }),
    fc.constant(undefined)
  )
})

const isValidToken = (answer: typeof tokenAnswers extends fc.Arbitrary<infer A> ? A : never): boolean =>
  typeof answer.expires_in === "number" && Number.isFinite(answer.expires_in) && answer.expires_in > 0 &&
  typeof answer.access_token === "string" && /^[\x21-\x7e]{1,16384}$/.test(answer.access_token)

describe("fuzz: token answers with bad lifetimes and tokens", () => {
  it.live("each ends in a TokenError, or a call made with the token when it is valid", () =>
    Effect.gen(function*() {
      const samples = fc.sample(tokenAnswers, { numRuns: 300, seed })
      const url = yield* listen((request, body, response) => {
        if (request.url !== "/oauth2/token") return response.end("{}")
        const index = Number(new URLSearchParams(body).get("client_id")?.slice(5))
        const { access_token, expires_in } = samples[index]!
        response.writeHead(200, { "content-type": "application/json" })
        // JSON.stringify writes Infinity and NaN as null, and leaves undefined out
        response.end(JSON.stringify({ access_token, expires_in, token_type: "Bearer" }))
      })
      const outcomes: Array<string> = []
      for (const [index, answer] of samples.entries()) {
        const outcome = yield* Effect.scoped(
          Effect.flatMap(client(url, `fuzz-${index}`), (exchange) =>
            Effect.map(Effect.exit(exchange.heartbeat), outcomeOf))
        )
        const sent = JSON.parse(JSON.stringify(answer)) as typeof answer
        const wanted = isValidToken(sent) ? "success" : "fail:TokenError"
        outcomes.push(
          outcome === wanted ? "ok" : `#${index} ${outcome}, wanted ${wanted}: ${JSON.stringify(sent).slice(0, 80)}`
        )
      }
      const wrong = outcomes.filter((outcome) =>
        outcome !== "ok"
      )
      console.log(`token-answer fuzz: ${samples.length} answers (seed ${seed}): ${wrong.length} unexpected`)
      expect(wrong).toEqual([])
    }).pipe(Effect.scoped), 300_000)
})
