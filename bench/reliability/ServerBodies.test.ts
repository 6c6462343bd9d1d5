/**
 * Fuzz, server side: 10,000 arbitrary and malformed answers (non-JSON, wrong
 * types, huge numbers, deep nesting, missing fields, error bodies with any
 * code, any status, cut-off bodies) through the client's real decoding path:
 * the real `ExchangeClient` over `FetchHttpClient`, against a local node:http
 * server that answers the token request normally and each POST quote or GET
 * transaction with the answer registered for its requestId. Every call must
 * end in a success (only for a 2xx answer) or a typed failure: one of the
 * client's tagged errors, never a defect.
 */
import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import { Cause, Context, Effect, Exit, Layer } from "effect"
import * as fc from "fast-check"
import * as Http from "node:http"
import type * as Net from "node:net"
import { clientLayer } from "../internal/gcx.js"

const runs = 10_000
const seed = 20_261_122

/** One answer of the fuzzing server. */
interface Answer {
  readonly status: number
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  /** Declare a longer body than is sent, then cut the connection. */
  readonly cut: boolean
}

const quote = {
  transactionId: "1JXX657P9VCKN74WVFNBH75GWR",
  isCompleted: true,
  percentComplete: 100,
  actualCardValue: 100.5,
  exchangeCardValue: 85.43,
  responseTimestamp: "2026-11-21T10:00:00.000Z",
  expectedCompletionTime: 0
}
const status = {
  entityid: quote.transactionId,
  createrid: 1001,
  createdTimestamp: "2026-11-21T10:00:00.000Z",
  updatedTimespamp: "2026-11-21T10:00:02.000Z",
  steps: [{ descriptionTag: "exchange.vault.credit.card", isCompleted: true, startTime: "2026-11-21T10:00:00.000Z" }],
  percentComplete: 100,
  completionTime: "2026-11-21T10:00:02.000Z",
  response: quote,
  request: { card: { cardNumber: "****0001", pinNumber: "****", productLineId: "1000" } }
}
const errorBody = { ErrorCode: "exchange.invalid.card", Message: "m", UserMessage: "u" }

/** A JSON value of any shape. */
const anyValue = fc.jsonValue({ maxDepth: 3 })

/** Numbers JSON can write but no double holds, or that are absurd for the field. */
const hugeNumber = fc.constantFrom(
  "1e400",
  "-1e400",
  "1e-400",
  "123456789012345678901234567890123456789",
  "9007199254740993",
  "-0",
  "1e308",
  "0.000000000000000000000000001"
)

/** A template with one key replaced by a value of another type, or removed. */
const mutated = (template: Record<string, unknown>) =>
  fc.tuple(fc.constantFrom(...Object.keys(template)), fc.option(anyValue, { nil: undefined })).map(([key, value]) => {
    const copy: Record<string, unknown> = { ...template }
    if (value === undefined) delete copy[key]
    else copy[key] = value
    return JSON.stringify(copy)
  })

/** A template with one numeric field written as a huge or odd number (raw text, as JSON can carry it). */
const withHugeNumber = (template: Record<string, unknown>) =>
  fc.tuple(fc.constantFrom(...Object.keys(template)), hugeNumber).map(([key, number]) =>
    JSON.stringify({ ...template, [key]: "__N__" }).replace("\"__N__\"", number)
  )

/** Nesting thousands of levels deep (beyond any recursion limit), alone or inside a field. */
const deep = fc.tuple(fc.integer({ min: 1_000, max: 50_000 }), fc.boolean(), fc.boolean()).map(
  ([depth, arrays, inside]) => {
    const nested = arrays ? "[".repeat(depth) + "]".repeat(depth) : "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)
    return inside ? JSON.stringify({ ...status, response: "__D__" }).replace("\"__D__\"", nested) : nested
  }
)

/** A template with a random subset of its keys. */
const partial = (template: Record<string, unknown>) =>
  fc.subarray(Object.keys(template)).map((keys) =>
    JSON.stringify(Object.fromEntries(keys.map((key) => [key, template[key]])))
  )

/** A valid JSON text cut at a random place. */
const truncated = (template: Record<string, unknown>) =>
  fc.integer({ min: 0, max: 400 }).map((cut) => JSON.stringify(template).slice(0, cut))

const bodies = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.json(),
  anyValue.map((value) => JSON.stringify(value)),
  fc.constantFrom("", " ", "null", "true", "[]", "{}", "\uFEFF{}", "NaN", "undefined", "{\"__proto__\":{\"x\":1}}"),
  hugeNumber,
  deep,
  mutated(quote),
  mutated(status),
  mutated({ ...status, response: { ...quote, isCompleted: false } }),
  withHugeNumber(quote),
  withHugeNumber(status),
  partial(quote),
  partial(status),
  truncated(status),
  mutated(errorBody),
  fc.record({
    ErrorCode: fc.oneof(fc.string(), fc.constantFrom("toString", "__proto__", "constructor", "exchange.invalid.card")),
    Message: fc.option(fc.string(), { nil: undefined }),
    UserMessage: fc.option(anyValue, { nil: undefined })
  }).map((body) => JSON.stringify(body)),
  fc.string({ minLength: 20_000, maxLength: 100_000 }).map((text) => JSON.stringify({ ...errorBody, Message: text })),
  fc.constant(JSON.stringify(quote)),
  fc.constant(JSON.stringify(status))
)

const answers: fc.Arbitrary<Answer> = fc.record({
  status: fc.oneof(
    fc.constantFrom(200, 201, 202, 204, 400, 401, 403, 404, 409, 413, 429, 500, 502, 503, 504),
    fc.integer({ min: 200, max: 599 })
  ),
  body: bodies,
  headers: fc.record({
    "content-type": fc.constantFrom("application/json", "text/plain", "application/json; charset=utf-8", "x/y"),
    "retry-after": fc.oneof(
      fc.constant("1"),
      fc.string({ maxLength: 20 }),
      fc.constant("Wed, 21 Oct 2099 07:28:00 GMT")
    ),
    "svc-trace-id": fc.string({ maxLength: 40 })
  }, { requiredKeys: ["content-type"] }),
  cut: fc.integer({ min: 0, max: 19 }).map((draw) => draw === 0)
})

/** The tags of every error the client may fail with. */
const typedErrors = new Set<string>([...Object.keys(Errors.Traits)])

/** A local server answering the token request normally and every other request with the answer for its requestId. */
const fuzzServer = (table: Map<string, Answer>) =>
  Effect.acquireRelease(
    Effect.callback<Http.Server>((resume) => {
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          if (request.url === "/oauth2/token") {
            response.writeHead(200, { "content-type": "application/json" })
            response.end(JSON.stringify({ access_token: "fuzz-token", expires_in: 3600, token_type: "Bearer" }))
            return
          }
          const answer = table.get(String(request.headers.requestid))
          if (answer === undefined) {
            response.writeHead(599)
            response.end()
            return
          }
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(answer.headers)) {
            if (/^[\t\x20-\x7e]*$/.test(value)) headers[name] = value
          }
          if (answer.cut) {
            const bytes = Buffer.from(answer.body)
            response.writeHead(answer.status, { ...headers, "content-length": String(bytes.length + 10) })
            response.write(bytes.subarray(0, Math.floor(bytes.length / 2)))
            setTimeout(() => response.destroy(), 5)
            return
          }
          response.writeHead(answer.status, headers)
          response.end(answer.body)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        resume(Effect.succeed(server))
      })
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )

/** How one call ended. */
type Outcome = "success" | `fail:${string}` | "defect" | "interrupted"

const outcomeOf = (exit: Exit.Exit<unknown, { readonly _tag: string }>): Outcome =>
  Exit.match(exit, {
    onSuccess: () => "success",
    onFailure: (cause) => {
      if (Cause.hasInterruptsOnly(cause)) return "interrupted"
      const failures = cause.reasons.filter(Cause.isFailReason).map((reason) => reason.error)
      return failures.length === 1 && !Cause.hasDies(cause)
        ? `fail:${failures[0]!._tag}` as const
        : "defect"
    }
  })

describe(`fuzz: ${runs.toLocaleString("en-US")} arbitrary and malformed server answers`, () => {
  it.live("every call ends in a success (2xx only) or a typed error, never a defect", () =>
    Effect.gen(function*() {
      const table = new Map<string, Answer>()
      const server = yield* fuzzServer(table)
      const port = (server.address() as Net.AddressInfo).port
      const url = `http://127.0.0.1:${port}`
      const samples = fc.sample(answers, { numRuns: runs, seed })
      samples.forEach((answer, index) => table.set(`fuzz-${index}`, answer))
      const client = yield* Layer.build(clientLayer({ baseUrl: url, authUrl: url, stage: "", adminKey: "" }, {
        clientId: "fuzz-partner",
        clientSecret: "fuzz-secret",
        apiKey: "fuzz-key",
        requestTimeout: "3 seconds",
        // hundreds of answers are 401s, each dropping the token: no spacing between token requests here
        // (the spacing has its own tests), or they would wait a second each
        minTokenInterval: 0,
        retry: { maxAttempts: 1 }
      })).pipe(Effect.map(Context.get(ExchangeClient.ExchangeClient)))
      const started = performance.now()
      const outcomes = yield* Effect.forEach(samples, (answer, index) => {
        const requestId = `fuzz-${index}`
        const call: Effect.Effect<unknown, { readonly _tag: string }> = index % 2 === 0
          ? client.createQuote({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" }, {
            requestId
          })
          : client.getTransaction("1JXX657P9VCKN74WVFNBH75GWR", { requestId })
        return Effect.exit(call).pipe(Effect.map((exit) => ({ index, answer, outcome: outcomeOf(exit) })))
      }, { concurrency: 16 })
      const seconds = (performance.now() - started) / 1000

      const counts: Record<string, number> = {}
      for (const { outcome } of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1
      console.log(
        `server-answer fuzz: ${runs} answers in ${seconds.toFixed(1)} s (seed ${seed}): ${JSON.stringify(counts)}`
      )
      const show = ({ answer, index, outcome }: (typeof outcomes)[number]) =>
        `#${index} ${outcome} HTTP ${answer.status}${answer.cut ? " cut" : ""}: ${answer.body.slice(0, 120)}`
      const defects = outcomes.filter(({ outcome }) => outcome === "defect" || outcome === "interrupted")
      expect(defects.map(show)).toEqual([])
      const untyped = outcomes.filter(({ outcome }) =>
        outcome.startsWith("fail:") && !typedErrors.has(outcome.slice(5))
      )
      expect(untyped.map(show)).toEqual([])
      const wrongSuccess = outcomes.filter(({ answer, outcome }) =>
        outcome === "success" && (answer.status < 200 || answer.status > 299)
      )
      expect(wrongSuccess.map(show)).toEqual([])
      // the fuzz reached both sides of the decoding
      expect(counts.success ?? 0).toBeGreaterThan(0)
      expect(counts["fail:UnexpectedResponse"] ?? 0).toBeGreaterThan(0)
    }).pipe(Effect.scoped), 300_000)
})
