import { describe, expect, it } from "@effect/vitest"
import { Errors, Ids, Redaction, Routes } from "@gcx/core"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import { prop } from "./fixtures.js"

describe("Ids", () => {
  it("makeRequestId is 32 lowercase hex characters, fresh every time", () => {
    const ids = Array.from({ length: 500 }, () => Ids.makeRequestId())
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{32}$/)
      expect(Result.isSuccess(Schema.decodeUnknownResult(Ids.RequestId)(id))).toBe(true)
    }
    expect(new Set(ids).size).toBe(ids.length)
    // every hex digit shows up: the bytes are not truncated or biased to a few values
    expect(new Set(ids.join("")).size).toBe(16)
  })

  it("makeRequestId never holds a run of 8 digits: a service that echoes it as its trace id has it kept", () => {
    // a random 32-hex id holds one about a quarter of the time
    const ids = Array.from({ length: 2_000 }, () => Ids.makeRequestId())
    expect(ids.filter((id) => /\d{8}/.test(id))).toEqual([])
    expect(ids.every((id) => Redaction.traceId(id) === id)).toBe(true)
  })

  it("makeTransactionId is 26 characters from the alphabet, fresh every time", () => {
    expect(Ids.TRANSACTION_ID_ALPHABET).toHaveLength(32)
    expect(new Set(Ids.TRANSACTION_ID_ALPHABET).size).toBe(32)
    expect(Ids.TRANSACTION_ID_ALPHABET).not.toMatch(/[ILOU]/)
    const shape = new RegExp(`^[${Ids.TRANSACTION_ID_ALPHABET}]{26}$`)
    const ids = Array.from({ length: 500 }, () => Ids.makeTransactionId())
    for (const id of ids) {
      expect(id).toMatch(shape)
      expect(Result.isSuccess(Schema.decodeUnknownResult(Ids.TransactionId)(id))).toBe(true)
    }
    expect(new Set(ids).size).toBe(ids.length)
    expect(new Set(ids.join("")).size).toBe(32)
    expect(Result.isSuccess(Schema.decodeUnknownResult(Ids.TransactionId)("1JXX657P9VCKN74WVFNBH75GWR"))).toBe(true)
  })

  it("RequestId accepts 1 to 64 letters, digits, '-' and '_' only, what the service takes", () => {
    const decode = Schema.decodeUnknownResult(Ids.RequestId)
    for (const ok of ["a", "0123456789abcdef0123456789abcdef", "x".repeat(64), "order-35_b", crypto.randomUUID()]) {
      expect(Result.isSuccess(decode(ok)), ok).toBe(true)
    }
    for (const bad of ["", "x".repeat(65), "has space", "order#43", "req.1", "a~b", "tab\t", "é", 42, null]) {
      expect(Result.isFailure(decode(bad)), String(bad)).toBe(true)
    }
    const failure = decode("order#43")
    if (Result.isFailure(failure)) {
      expect(failure.failure.message).toContain("requestId must be 1 to 64 letters, digits, '-' or '_'")
    }
    // what earlier versions recorded is still read back
    expect(Result.isSuccess(Schema.decodeUnknownResult(Ids.StoredRequestId)("req-1_2.3~!"))).toBe(true)
  })

  it("TransactionId accepts 1 to 128 URL-safe characters only", () => {
    const decode = Schema.decodeUnknownResult(Ids.TransactionId)
    for (const ok of ["A", "1JXX657P9VCKN74WVFNBH75GWR", "tx_1-2", "a".repeat(128)]) {
      expect(Result.isSuccess(decode(ok)), ok).toBe(true)
    }
    for (const bad of ["", "a".repeat(129), "../etc/passwd", "a/b", "a?b", "a b", "a%2F", 7]) {
      expect(Result.isFailure(decode(bad)), String(bad)).toBe(true)
    }
  })
})

describe("Routes", () => {
  it("quotePath with and without a stage", () => {
    expect(Routes.quotePath()).toBe("/v3/exchange/quote")
    expect(Routes.quotePath(undefined)).toBe("/v3/exchange/quote")
    expect(Routes.quotePath("")).toBe("/v3/exchange/quote")
    expect(Routes.quotePath("prod")).toBe("/prod/v3/exchange/quote")
    expect(Routes.quotePath("sandbox")).toBe("/sandbox/v3/exchange/quote")
  })

  it("transactionPath appends the encoded id", () => {
    expect(Routes.transactionPath("1JXX657P9VCKN74WVFNBH75GWR")).toBe("/v3/exchange/quote/1JXX657P9VCKN74WVFNBH75GWR")
    expect(Routes.transactionPath("1JXX657P9VCKN74WVFNBH75GWR", "prod")).toBe(
      "/prod/v3/exchange/quote/1JXX657P9VCKN74WVFNBH75GWR"
    )
    expect(Routes.transactionPath("a/b?c#d")).toBe("/v3/exchange/quote/a%2Fb%3Fc%23d")
  })

  it("the token and heartbeat paths", () => {
    expect(Routes.tokenPath).toBe("/oauth2/token")
    expect(Routes.heartbeatPath).toBe("/exchange/v3/heartbeat")
  })

  it("header names as the service spells them", () => {
    expect(Routes.Headers).toEqual({
      authorization: "authorization",
      apiKey: "x-api-key",
      requestId: "requestId",
      previousAttempts: "previousAttempts",
      traceId: "SVC-TRACE-ID",
      location: "location",
      retryAfter: "retry-after"
    })
    // fromResponse reads the trace id under the name Routes gives it, in any case
    const error = Errors.fromResponse({ status: 500, headers: { [Routes.Headers.traceId]: "t" }, body: "" })
    expect(error.traceId).toBe("t")
  })
})

describe("Errors.parseRetryAfter", () => {
  const now = Date.parse("2015-10-21T07:28:00.000Z")

  it("reads delta-seconds", () => {
    expect(Errors.parseRetryAfter("120")).toBe(120_000)
    expect(Errors.parseRetryAfter("0")).toBe(0)
    expect(Errors.parseRetryAfter(" 7 ")).toBe(7_000)
    expect(Errors.parseRetryAfter("1.5")).toBe(1_500)
    expect(Errors.parseRetryAfter("120", now)).toBe(120_000)
  })

  it("reads an HTTP date relative to now, never negative", () => {
    expect(Errors.parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now)).toBe(30_000)
    expect(Errors.parseRetryAfter("Wednesday, 21-Oct-15 07:29:00 GMT", now)).toBe(60_000)
    expect(Errors.parseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", now)).toBe(0)
  })

  it("cannot read an HTTP date without now", () => {
    expect(Errors.parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT")).toBeUndefined()
  })

  it("refuses garbage", () => {
    for (
      const garbage of [
        undefined,
        "",
        "   ",
        "soon",
        "-1",
        "-5",
        "+5",
        "1e3",
        "0x10",
        "5s",
        "1,5",
        "hello 2020",
        "Wed, garbage",
        "9".repeat(400)
      ]
    ) {
      expect(Errors.parseRetryAfter(garbage, now), String(garbage)).toBeUndefined()
    }
  })

  prop("any header value gives undefined or a finite, non-negative delay", {
    value: fc.oneof(fc.string(), fc.nat().map(String), fc.date().map((date) => date.toUTCString())),
    now: fc.integer({ min: 0, max: 4_102_444_800_000 })
  }, ({ now, value }) => {
    const millis = Errors.parseRetryAfter(value, now)
    if (millis !== undefined) {
      expect(Number.isFinite(millis)).toBe(true)
      expect(millis).toBeGreaterThanOrEqual(0)
    }
  }, { numRuns: 200 })
})
