import { describe, expect, it } from "@effect/vitest"
import { Card, ErrorBody, Errors, Quote, QuoteEvent, Redaction, Token, Transaction, Wire } from "@gcx/core"
import { Cause, Effect, Exit, Result, Schema } from "effect"
import * as fc from "fast-check"
import { errorBody, plainServiceErrorTags, prop, sampleStatus } from "./fixtures.js"

const wireSchemas: ReadonlyArray<readonly [string, Schema.Codec<any, any>]> = [
  ["Card", Card.Card],
  ["QuoteRequest", Quote.QuoteRequest],
  ["QuoteResponse", Quote.QuoteResponse],
  ["CompletedQuote", Quote.CompletedQuote],
  ["Step", Transaction.Step],
  ["TransactionStatus", Transaction.TransactionStatus],
  ["ErrorBody", ErrorBody.ErrorBody],
  ["TokenResponse", Token.TokenResponse],
  ["OAuthErrorBody", Token.OAuthErrorBody],
  ["QuoteEvent", QuoteEvent.QuoteEvent],
  ["QuoteFailure", Errors.QuoteFailure],
  ["Money", Wire.Money],
  ["Timestamp", Wire.Timestamp],
  ["WireNumber", Wire.WireNumber]
]

/** The service errors that `fromResponse` may return for an answer (`TransportError` never comes from one). */
const serviceErrorTags = new Set<string>(plainServiceErrorTags)

/** Decoding returns a SchemaError in a Result, never throws. */
const expectParseError = (schema: Schema.Codec<any, any>, input: unknown, label: string) => {
  let result: Result.Result<unknown, Schema.SchemaError> | undefined
  expect(() => {
    result = Schema.decodeUnknownResult(schema)(input)
  }, label).not.toThrow()
  expect(Result.isFailure(result!), label).toBe(true)
  if (Result.isFailure(result!)) expect(Schema.isSchemaError(result.failure)).toBe(true)
}

/** fromResponse returns a tagged service error, never throws. */
const expectTypedError = (status: number, body: string): Errors.ServiceError => {
  let error: Errors.ServiceError | undefined
  expect(() => {
    error = Errors.fromResponse({ status, headers: {}, body })
  }).not.toThrow()
  expect(error).toBeInstanceOf(Error)
  expect(serviceErrorTags.has(error!._tag)).toBe(true)
  expect(error!.httpStatus).toBe(status)
  expect(typeof error!.message).toBe("string")
  return error!
}

const nestedArrays = (depth: number) => "[".repeat(depth) + "]".repeat(depth)
const nestedObject = (depth: number, key: string): unknown => {
  let value: unknown = { junk: true }
  // one child per level, so that the JSON text stays linear in the depth
  for (let i = 0; i < depth; i++) value = i % 3 === 0 ? { [key]: value } : i % 3 === 1 ? { response: value } : [value]
  return value
}

describe("malformed payloads give a typed error", () => {
  it("wrong types", () => {
    const status = sampleStatus
    const cases: ReadonlyArray<readonly [Schema.Codec<any, any>, unknown]> = [
      [Quote.QuoteResponse, { ...status.response, transactionId: 7 }],
      [Quote.QuoteResponse, { ...status.response, isCompleted: "true" }],
      [Quote.QuoteResponse, { ...status.response, percentComplete: "50" }],
      [Quote.QuoteResponse, { ...status.response, actualCardValue: { amount: 5 } }],
      [Quote.QuoteResponse, { ...status.response, responseTimestamp: 1_763_719_200_000 }],
      [Transaction.TransactionStatus, { ...status, steps: {} }],
      [Transaction.TransactionStatus, { ...status, steps: [{ descriptionTag: 5, isCompleted: true }] }],
      [Transaction.TransactionStatus, { ...status, createrid: "1234" }],
      [Transaction.TransactionStatus, { ...status, request: { card: "6006" } }],
      [Quote.QuoteRequest, { card: { cardNumber: 6006, pinNumber: "1", productLineId: "p" } }],
      [ErrorBody.ErrorBody, { ErrorCode: ["exchange.invalid.card"] }],
      [ErrorBody.ErrorBody, { ErrorCode: "c", Message: 5 }],
      [Token.TokenResponse, { access_token: 5, expires_in: 3600, token_type: "Bearer" }],
      [Token.TokenResponse, { access_token: "a", expires_in: "3600", token_type: "Bearer" }],
      [Token.OAuthErrorBody, { error: 400 }]
    ]
    cases.forEach(([schema, input], index) => expectParseError(schema, input, `case ${index}`))
  })

  it("missing required fields", () => {
    const cases: ReadonlyArray<readonly [Schema.Codec<any, any>, unknown]> = [
      [Quote.QuoteResponse, { isCompleted: true }],
      [Quote.QuoteResponse, { transactionId: "T" }],
      [Quote.CompletedQuote, { transactionId: "T", actualCardValue: 1 }],
      [Transaction.TransactionStatus, { ...sampleStatus, response: undefined }],
      [Transaction.Step, { descriptionTag: "s" }],
      [Quote.QuoteRequest, {}],
      [Quote.QuoteRequest, { card: { cardNumber: "1", pinNumber: "2" } }],
      [ErrorBody.ErrorBody, { Message: "m", UserMessage: "u" }],
      [Token.TokenResponse, { access_token: "a", token_type: "Bearer" }],
      [Token.OAuthErrorBody, { error_description: "d" }]
    ]
    cases.forEach(([schema, input], index) => expectParseError(schema, input, `case ${index}`))
  })

  it("values that are not objects at all", () => {
    for (const [name, schema] of wireSchemas) {
      for (const input of [undefined, null, true, 0, "", "{}", [], [{}], Symbol("x"), () => 1, new Date(0)]) {
        if ((name === "WireNumber" || name === "Money") && input === 0) continue
        expectParseError(schema, input, `${name} ${String(input)}`)
      }
    }
  })

  it("huge numbers (1e400, which JSON.parse makes Infinity) are refused", () => {
    const text = JSON.stringify(sampleStatus).replace("\"actualCardValue\":25.5", "\"actualCardValue\":1e400")
    const parsed = JSON.parse(text)
    expect(parsed.response.actualCardValue).toBe(Infinity)
    expectParseError(Transaction.TransactionStatus, parsed, "actualCardValue 1e400")
    expectParseError(
      Quote.QuoteResponse,
      JSON.parse("{\"transactionId\":\"T\",\"isCompleted\":false,\"percentComplete\":1e400}"),
      "percent"
    )
    expectParseError(
      Token.TokenResponse,
      JSON.parse("{\"access_token\":\"a\",\"expires_in\":-1e400,\"token_type\":\"Bearer\"}"),
      "expires"
    )
    expectParseError(Wire.Money, "1e400", "money string 1e400")
    expectParseError(Wire.Money, NaN, "money NaN")
    expectParseError(Wire.WireNumber, Infinity, "number Infinity")
    const error = expectTypedError(400, "{\"ErrorCode\":\"exchange.invalid.card\",\"Message\":1e400}")
    expect(error._tag).toBe("UnexpectedResponse")
  })

  it("deeply nested junk", () => {
    for (const [name, schema] of wireSchemas) {
      expectParseError(schema, nestedObject(5_000, "card"), name)
      expectParseError(schema, JSON.parse(nestedArrays(5_000)), name)
    }
    expect(expectTypedError(400, nestedArrays(100_000))._tag).toBe("UnexpectedResponse")
    expect(expectTypedError(400, JSON.stringify(nestedObject(2_000, "ErrorCode")))._tag).toBe("UnexpectedResponse")
    expect(expectTypedError(503, nestedArrays(100_000))._tag).toBe("ServiceUnavailable")
  })

  it("non-JSON text through fromResponse", () => {
    for (
      const body of ["", " ", "<html>Bad Request</html>", "{", "{\"ErrorCode\":", "undefined", "NaN", "\u0000", "'x'"]
    ) {
      expect(expectTypedError(400, body)._tag).toBe("UnexpectedResponse")
      expect(expectTypedError(409, body)._tag).toBe("UnexpectedResponse")
      expect(expectTypedError(500, body)._tag).toBe("ServerError")
      expect(expectTypedError(429, body)._tag).toBe("RateLimited")
    }
  })

  it("JSON that is not an Error object through fromResponse", () => {
    for (const body of ["null", "true", "42", "\"exchange.invalid.card\"", "[]", "[{\"ErrorCode\":\"x\"}]", "{}"]) {
      const error = expectTypedError(400, body)
      expect(error._tag).toBe("UnexpectedResponse")
      expect(error.message).toMatch(/^HTTP 400 without an Error body: /)
    }
  })

  it.effect("as an Effect, decoding fails in the error channel and never dies", () =>
    Effect.gen(function*() {
      for (const [name, schema] of wireSchemas) {
        for (const junk of [null, "junk", nestedObject(200, "x"), { response: { transactionId: 1 } }]) {
          const exit = yield* Effect.exit(Schema.decodeUnknownEffect(schema)(junk))
          expect(Exit.isFailure(exit), name).toBe(true)
          if (Exit.isFailure(exit)) {
            expect(exit.cause.reasons.length > 0 && exit.cause.reasons.every(Cause.isFailReason), name).toBe(true)
            expect(Cause.hasDies(exit.cause)).toBe(false)
          }
        }
      }
      const error = yield* Effect.flip(QuoteEvent.decode({ _tag: "Completed", quote: null }))
      expect(Schema.isSchemaError(error)).toBe(true)
    }))

  it("Errors.unexpectedResponse takes a reason or a SchemaError", () => {
    const fromString = Errors.unexpectedResponse({ httpStatus: 201, requestId: "r" }, "the Location header is missing")
    expect(fromString).toMatchObject({
      _tag: "UnexpectedResponse",
      httpStatus: 201,
      requestId: "r",
      message: "the service's answer did not decode: the Location header is missing"
    })
    expect(fromString.traceId).toBeUndefined()
    const parseError = Result.getFailure(Schema.decodeUnknownResult(Quote.QuoteResponse)({ transactionId: "T" }))
    const fromParse = Errors.unexpectedResponse(
      { httpStatus: 201, traceId: "t", transactionId: "T" },
      parseError.pipe(
        (o) => o._tag === "Some" ? o.value : "unreachable"
      )
    )
    expect(fromParse.message).toBe("the service's answer did not decode: isCompleted is missing")
    expect(fromParse).toMatchObject({ traceId: "t", transactionId: "T", httpStatus: 201 })
    expect(Errors.groupOf(fromParse)).toBe("transport")
  })
})

describe("properties over arbitrary input", () => {
  const anyInput = fc.oneof(
    fc.jsonValue({ maxDepth: 6 }),
    fc.anything({
      maxDepth: 4,
      withBigInt: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true
    }),
    fc.record({ response: fc.jsonValue({ maxDepth: 3 }), request: fc.jsonValue({ maxDepth: 3 }) }),
    fc.record({ card: fc.dictionary(fc.constantFrom("cardNumber", "pinNumber", "productLineId"), fc.jsonValue()) })
  )

  prop("decoding any wire schema never throws", { input: anyInput }, ({ input }) => {
    for (const [name, schema] of wireSchemas) {
      expect(() => Schema.decodeUnknownResult(schema)(input), name).not.toThrow()
    }
  }, { numRuns: 300 })

  const codeArb = fc.oneof(
    fc.string(),
    fc.constantFrom(
      ...Object.values(ErrorBody.ErrorCodes),
      "constructor",
      "toString",
      "__proto__",
      "hasOwnProperty",
      "valueOf",
      "__defineGetter__",
      "propertyIsEnumerable"
    )
  )

  const bodyArb = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
    fc.string(),
    fc.record({
      ErrorCode: codeArb,
      Message: fc.oneof(fc.string(), fc.jsonValue({ maxDepth: 1 })),
      UserMessage: fc.oneof(fc.string(), fc.constant(null)),
      MoreInfoUrl: fc.webUrl()
    }, { requiredKeys: [] }).map((body) => JSON.stringify(body)),
    fc.record({ errorCode: codeArb, message: fc.string(), userMessage: fc.string() }, { requiredKeys: [] }).map((
      body
    ) => JSON.stringify(body))
  )

  prop(
    "fromResponse never throws and always returns a tagged service error",
    {
      status: fc.integer({ min: 100, max: 599 }),
      body: bodyArb,
      traceId: fc.option(fc.string(), { nil: undefined }),
      retryAfter: fc.option(fc.string(), { nil: undefined }),
      now: fc.option(fc.integer({ min: 0, max: 4_102_444_800_000 }), { nil: undefined })
    },
    ({ body, now, retryAfter, status, traceId }) => {
      const headers: Record<string, string> = {}
      if (traceId !== undefined) headers["Svc-Trace-Id"] = traceId
      if (retryAfter !== undefined) headers["Retry-After"] = retryAfter
      const error = Errors.fromResponse({ status, headers, body, now })
      expect(error).toBeInstanceOf(Error)
      expect(serviceErrorTags.has(error._tag)).toBe(true)
      expect(error.httpStatus).toBe(status)
      expect(error.traceId).toBe(Redaction.traceId(traceId))
      expect(typeof error.message).toBe("string")
      if (error.retryAfterMillis !== undefined) {
        expect(Number.isFinite(error.retryAfterMillis)).toBe(true)
        expect(error.retryAfterMillis).toBeGreaterThanOrEqual(0)
      }
      // every trait is answered, and the error is data that survives JSON
      expect(typeof Errors.isTransient(error)).toBe("boolean")
      expect(typeof Errors.isCustomerFacing(error)).toBe("boolean")
      const encoded = JSON.parse(JSON.stringify(Schema.encodeSync(Errors.QuoteFailure)(error)))
      expect(Schema.decodeUnknownSync(Errors.QuoteFailure)(encoded)._tag).toBe(error._tag)
    },
    { numRuns: 500 }
  )

  prop(
    "an Error body keeps its code (digits scrubbed), whatever the code",
    { status: fc.constantFrom(400, 404, 409, 422), code: codeArb, message: fc.string() },
    ({ code, message, status }) => {
      const error = Errors.fromResponse({ status, headers: {}, body: errorBody(code, message) })
      expect(error.errorCode).toBe(Redaction.scrubDigits(code))
      expect(error._tag).not.toBe("UnexpectedResponse")
      const known = Errors.classForCode(code)
      expect(error).toBeInstanceOf(known ?? Errors.UnknownServiceError)
    },
    { numRuns: 300 }
  )
})
