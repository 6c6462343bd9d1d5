import { describe, expect, it } from "@effect/vitest"
import { Card, ErrorBody, Quote, Token, Transaction, Wire } from "@gcx/core"
import { BigDecimal, DateTime, Redacted, Result, Schema } from "effect"
import * as fc from "fast-check"
import {
  errorBodyWireArb,
  expectRoundTrip,
  json,
  oauthErrorBodyWireArb,
  prop,
  quoteRequestWireArb,
  quoteResponseWireArb,
  sampleStatus,
  stepWireArb,
  tokenResponseWireArb,
  transactionStatusWireArb
} from "./fixtures.js"

const runs = { numRuns: 200 }

const decode = <S extends Schema.Decoder<unknown>>(schema: S, input: unknown) =>
  Schema.decodeUnknownResult(schema)(input)
const decodeOk = <S extends Schema.Decoder<unknown>>(schema: S, input: unknown): S["Type"] => {
  const result = decode(schema, input)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

/** Adds fields the schema does not know, at the top level of a record. */
const unknownFieldsArb = fc.dictionary(
  fc.string({ minLength: 1 }).map((key) => `x-unknown-${key}`),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 3 }
)

describe("round trip: decode then encode gives back equal JSON", () => {
  prop("QuoteRequest", { wire: quoteRequestWireArb }, ({ wire }) => {
    expectRoundTrip(Quote.QuoteRequest, wire)
  }, runs)

  prop("Card", { wire: quoteRequestWireArb }, ({ wire }) => {
    expectRoundTrip(Card.Card, wire.card)
  }, runs)

  prop("QuoteResponse", { wire: quoteResponseWireArb }, ({ wire }) => {
    expectRoundTrip(Quote.QuoteResponse, wire)
  }, runs)

  prop("Step", { wire: stepWireArb }, ({ wire }) => {
    expectRoundTrip(Transaction.Step, wire)
  }, runs)

  prop("TransactionStatus", { wire: transactionStatusWireArb }, ({ wire }) => {
    expectRoundTrip(Transaction.TransactionStatus, wire)
  }, runs)

  prop("ErrorBody", { wire: errorBodyWireArb }, ({ wire }) => {
    expectRoundTrip(ErrorBody.ErrorBody, wire)
  }, runs)

  prop("TokenResponse", { wire: tokenResponseWireArb }, ({ wire }) => {
    expectRoundTrip(Token.TokenResponse, wire)
  }, runs)

  prop("OAuthErrorBody", { wire: oauthErrorBodyWireArb }, ({ wire }) => {
    expectRoundTrip(Token.OAuthErrorBody, wire)
  }, runs)

  prop(
    "CompletedQuote",
    {
      wire: quoteResponseWireArb.map(({ actualCardValue, exchangeCardValue, responseTimestamp, transactionId }) => ({
        transactionId,
        actualCardValue: actualCardValue ?? 0,
        exchangeCardValue: exchangeCardValue ?? 0,
        ...(responseTimestamp === undefined ? {} : { responseTimestamp })
      }))
    },
    ({ wire }) => {
      expectRoundTrip(Quote.CompletedQuote, wire)
    },
    runs
  )

  it("the spec's completed example", () => {
    const status = expectRoundTrip(Transaction.TransactionStatus, sampleStatus)
    expect(status.response.isCompleted).toBe(true)
    expect(status.steps?.map((step) => step.descriptionTag)).toEqual([
      Transaction.StepTags.vaultCreditCard,
      Transaction.StepTags.fraudCheck
    ])
  })
})

describe("tolerant reader", () => {
  prop(
    "unknown fields are ignored, at every level",
    { wire: transactionStatusWireArb, top: unknownFieldsArb, nested: unknownFieldsArb },
    ({ nested, top, wire }) => {
      const noisy = {
        ...top,
        ...wire,
        response: { ...nested, ...wire.response },
        ...(wire.steps === undefined ? {} : { steps: wire.steps.map((step) => ({ ...nested, ...step })) }),
        ...(wire.request === undefined ? {} : { request: { ...top, card: { ...nested, ...wire.request.card } } })
      }
      const decoded = decodeOk(Transaction.TransactionStatus, noisy)
      expect(json(Schema.encodeSync(Transaction.TransactionStatus)(decoded))).toEqual(json(wire))
    },
    runs
  )

  prop("unknown fields of the Error and token bodies are ignored", {
    error: errorBodyWireArb,
    token: tokenResponseWireArb,
    extra: unknownFieldsArb
  }, ({ error, extra, token }) => {
    const decodedError = decodeOk(ErrorBody.ErrorBody, { ...extra, ...error })
    expect(json(Schema.encodeSync(ErrorBody.ErrorBody)(decodedError))).toEqual(json(error))
    const decodedToken = decodeOk(Token.TokenResponse, { ...extra, ...token, scope: "x/exchange/sandbox/full-access" })
    expect(json(Schema.encodeSync(Token.TokenResponse)(decodedToken))).toEqual(json(token))
  }, runs)

  it("a quote that is not completed yet decodes without its values", () => {
    const response = decodeOk(Quote.QuoteResponse, { transactionId: "T", isCompleted: false })
    expect(response.actualCardValue).toBeUndefined()
    expect(response.exchangeCardValue).toBeUndefined()
    expect(response.percentComplete).toBeUndefined()
    expect(response.responseTimestamp).toBeUndefined()
    expect(response.expectedCompletionTime).toBeUndefined()
    const status = decodeOk(Transaction.TransactionStatus, {
      entityid: "e",
      percentComplete: 40,
      steps: [{ descriptionTag: "exchange.vault.credit.card", isCompleted: false, startTime: "2026-01-01T00:00:00Z" }],
      response: { transactionId: "T", isCompleted: false, percentComplete: 40, expectedCompletionTime: 3000 }
    })
    expect(status.response.percentComplete).toBe(40)
    expect(status.steps?.[0]?.completionTime).toBeUndefined()
    expect(status.completionTime).toBeUndefined()
  })

  it("a TransactionStatus needs nothing but its response", () => {
    const status = decodeOk(Transaction.TransactionStatus, { response: { transactionId: "T", isCompleted: false } })
    expect(Schema.encodeSync(Transaction.TransactionStatus)(status)).toEqual({
      response: { transactionId: "T", isCompleted: false }
    })
    expect(Result.isFailure(decode(Transaction.TransactionStatus, { entityid: "e" }))).toBe(true)
  })

  it("a number is accepted where the spec says integer (42.0 and 42.5)", () => {
    for (const n of [42, 42.0, 42.5]) {
      const response = decodeOk(Quote.QuoteResponse, {
        transactionId: "T",
        isCompleted: false,
        percentComplete: n,
        expectedCompletionTime: n
      })
      expect(response.percentComplete).toBe(n)
      expect(response.expectedCompletionTime).toBe(n)
      const status = decodeOk(Transaction.TransactionStatus, {
        createrid: n,
        percentComplete: n,
        response: { transactionId: "T", isCompleted: false }
      })
      expect(status.createrid).toBe(n)
      expect(status.percentComplete).toBe(n)
      const token = decodeOk(Token.TokenResponse, { access_token: "jwt", expires_in: n, token_type: "Bearer" })
      expect(token.expires_in).toBe(n)
    }
    // 42.0 is the JSON text "42.0", which JSON.parse reads as 42
    expect(
      decodeOk(
        Quote.QuoteResponse,
        JSON.parse("{\"transactionId\":\"T\",\"isCompleted\":true,\"percentComplete\":42.0}")
      )
    )
      .toMatchObject({ percentComplete: 42 })
  })

  it("null is accepted for every optional field, and is absent once decoded", () => {
    const response = decodeOk(Quote.QuoteResponse, {
      transactionId: "T",
      isCompleted: false,
      percentComplete: null,
      actualCardValue: null,
      exchangeCardValue: null,
      responseTimestamp: null,
      expectedCompletionTime: null
    })
    expect(Schema.encodeSync(Quote.QuoteResponse)(response)).toEqual({ transactionId: "T", isCompleted: false })
    const status = decodeOk(Transaction.TransactionStatus, {
      entityid: null,
      createrid: null,
      createdTimestamp: null,
      updatedTimespamp: null,
      steps: null,
      percentComplete: null,
      completionTime: null,
      response: { transactionId: "T", isCompleted: false },
      request: null
    })
    expect(Object.keys(Schema.encodeSync(Transaction.TransactionStatus)(status))).toEqual(["response"])
    const step = decodeOk(Transaction.Step, {
      descriptionTag: "s",
      isCompleted: false,
      startTime: null,
      completionTime: null
    })
    expect(Schema.encodeSync(Transaction.Step)(step)).toEqual({ descriptionTag: "s", isCompleted: false })
    const error = decodeOk(ErrorBody.ErrorBody, { ErrorCode: "c", Message: null, UserMessage: null, MoreInfoUrl: null })
    expect(Schema.encodeSync(ErrorBody.ErrorBody)(error)).toEqual({ ErrorCode: "c" })
    const oauth = decodeOk(Token.OAuthErrorBody, { error: "invalid_client", error_description: null })
    expect(Schema.encodeSync(Token.OAuthErrorBody)(oauth)).toEqual({ error: "invalid_client" })
  })

  it("money may come as a numeric string, and is written back as a JSON number", () => {
    const response = decodeOk(Quote.QuoteResponse, {
      transactionId: "T",
      isCompleted: true,
      actualCardValue: "25.50",
      exchangeCardValue: " 21.68 "
    })
    expect(BigDecimal.equals(response.actualCardValue!, BigDecimal.fromStringUnsafe("25.5"))).toBe(true)
    expect(BigDecimal.equals(response.exchangeCardValue!, BigDecimal.fromStringUnsafe("21.68"))).toBe(true)
    expect(Schema.encodeSync(Quote.QuoteResponse)(response)).toMatchObject({
      actualCardValue: 25.5,
      exchangeCardValue: 21.68
    })
  })

  it("money that is not an amount is refused: blank, non-numeric, non-finite", () => {
    for (const bad of ["", "   ", "abc", "12,50", "0x10", "1e400", "-1e400", true, null, {}, [], NaN, Infinity]) {
      expect(Result.isFailure(decode(Wire.Money, bad)), JSON.stringify(String(bad))).toBe(true)
    }
  })

  it("timestamps in other ISO 8601 forms are read as UTC", () => {
    const read = (text: string) => Schema.encodeSync(Wire.Timestamp)(decodeOk(Wire.Timestamp, text))
    expect(read("2026-11-21T10:00:00Z")).toBe("2026-11-21T10:00:00.000Z")
    expect(read("2026-11-21T10:00:00.5Z")).toBe("2026-11-21T10:00:00.500Z")
    expect(read("2026-11-21T10:00:00.123456Z")).toBe("2026-11-21T10:00:00.123Z")
    expect(read("2026-11-21T12:00:00.000+02:00")).toBe("2026-11-21T10:00:00.000Z")
    // without a zone the service's timestamps are UTC, whatever the host's zone
    expect(read("2026-11-21T10:00:00")).toBe("2026-11-21T10:00:00.000Z")
    for (const bad of ["", "garbage", "2026-13-45T99:00:00Z", 1_763_719_200_000, null]) {
      expect(Result.isFailure(decode(Wire.Timestamp, bad)), String(bad)).toBe(true)
    }
  })

  it("the Error body accepts alias spellings through normalizeKeys only", () => {
    const aliased = { errorCode: "exchange.invalid.card", message: "m", userMessage: "u", moreInfoUrl: "https://x" }
    expect(Result.isFailure(decode(ErrorBody.ErrorBody, aliased))).toBe(true)
    const body = decodeOk(ErrorBody.ErrorBody, ErrorBody.normalizeKeys(aliased))
    expect(Schema.encodeSync(ErrorBody.ErrorBody)(body)).toEqual({
      ErrorCode: "exchange.invalid.card",
      Message: "m",
      UserMessage: "u",
      MoreInfoUrl: "https://x"
    })
    expect(ErrorBody.normalizeKeys({ code: "c", user_message: "u" })).toMatchObject({
      ErrorCode: "c",
      UserMessage: "u"
    })
    expect(ErrorBody.normalizeKeys({ ErrorCode: "canonical", errorCode: "alias" })).toMatchObject({
      ErrorCode: "canonical"
    })
    expect(ErrorBody.normalizeKeys({ errorCode: 42 })).not.toHaveProperty("ErrorCode")
    for (const notAnObject of [null, "text", 3, [1, 2]]) expect(ErrorBody.normalizeKeys(notAnObject)).toBe(notAnObject)
  })
})

describe("wire names exactly as the spec spells them", () => {
  it("TransactionStatus reads and writes createrid and updatedTimespamp", () => {
    const status = decodeOk(Transaction.TransactionStatus, sampleStatus)
    expect(status.createrid).toBe(1234)
    expect(DateTime.formatIso(status.updatedTimespamp!)).toBe("2026-11-21T10:00:03.250Z")
    const encoded = Schema.encodeSync(Transaction.TransactionStatus)(status)
    expect(Object.keys(encoded)).toEqual(expect.arrayContaining(["entityid", "createrid", "updatedTimespamp"]))
    expect(encoded).not.toHaveProperty("creatorId")
    expect(encoded).not.toHaveProperty("updatedTimestamp")
  })

  it("the corrected spellings are not the wire names", () => {
    const status = decodeOk(Transaction.TransactionStatus, {
      creatorid: 5,
      createrId: 6,
      updatedTimestamp: "2026-11-21T10:00:00.000Z",
      response: { transactionId: "T", isCompleted: false }
    })
    expect(status.createrid).toBeUndefined()
    expect(status.updatedTimespamp).toBeUndefined()
  })

  it("the Error body is written with capitalised fields", () => {
    const body = decodeOk(ErrorBody.ErrorBody, {
      ErrorCode: "exchange.invalid.card",
      Message: "m",
      UserMessage: "u",
      MoreInfoUrl: "https://x"
    })
    expect(Object.keys(Schema.encodeSync(ErrorBody.ErrorBody)(body)).sort()).toEqual([
      "ErrorCode",
      "Message",
      "MoreInfoUrl",
      "UserMessage"
    ])
    expect(Result.isFailure(decode(ErrorBody.ErrorBody, { Message: "m" }))).toBe(true)
  })

  it("the QuoteRequest nests card.cardNumber, card.pinNumber and card.productLineId", () => {
    const request = new Quote.QuoteRequest({
      card: new Card.Card({
        cardNumber: Redacted.make("1234"),
        pinNumber: Redacted.make("99"),
        productLineId: "pl"
      })
    })
    expect(Schema.encodeSync(Quote.QuoteRequest)(request)).toEqual({
      card: { cardNumber: "1234", pinNumber: "99", productLineId: "pl" }
    })
    for (const missing of ["cardNumber", "pinNumber", "productLineId"]) {
      const card: Record<string, string> = { cardNumber: "1", pinNumber: "2", productLineId: "3" }
      delete card[missing]
      expect(Result.isFailure(decode(Quote.QuoteRequest, { card })), missing).toBe(true)
    }
  })

  it("the token response uses the OAuth names", () => {
    const token = decodeOk(Token.TokenResponse, { access_token: "a.b.c", expires_in: 3600, token_type: "Bearer" })
    expect(Schema.encodeSync(Token.TokenResponse)(token)).toEqual({
      access_token: "a.b.c",
      expires_in: 3600,
      token_type: "Bearer"
    })
    expect(
      Result.isFailure(decode(Token.TokenResponse, { accessToken: "a.b.c", expiresIn: 3600, tokenType: "Bearer" }))
    )
      .toBe(true)
  })
})
