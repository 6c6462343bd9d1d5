import { describe, expect, it } from "@effect/vitest"
import { Card, Errors, Quote, QuoteEvent, Redaction, Transaction } from "@gcx/core"
import { DateTime, Duration, Formatter, Inspectable, Option, Result, Schema } from "effect"
import * as util from "node:util"
import { errorBody, sampleStatus, SENTINEL_CARD, SENTINEL_PIN } from "./fixtures.js"

/** Every way a value may end up in a log. */
const renderings = (value: unknown): Record<string, string> => {
  const out: Record<string, string> = {
    String: String(value),
    JSON: JSON.stringify(value) ?? "",
    "Formatter.format": Formatter.format(value),
    "util.inspect": util.inspect(value, { depth: Infinity, getters: true, showHidden: false }),
    "util.format": util.format("%s %o %j", value, value, value),
    toStringUnknown: Inspectable.toStringUnknown(value)
  }
  if (value instanceof Error) {
    out.message = value.message
    out.stack = value.stack ?? ""
  }
  return out
}

const expectNoSecret = (value: unknown, label = "value") => {
  for (const [how, text] of Object.entries(renderings(value))) {
    expect(text, `${label} via ${how}`).not.toContain(SENTINEL_CARD)
    expect(text, `${label} via ${how}`).not.toContain(SENTINEL_PIN)
  }
}

const card = Result.getOrThrow(
  Card.validateResult({ cardNumber: SENTINEL_CARD, pinNumber: SENTINEL_PIN, productLineId: "pl-amazing-store" })
)
const timestamp = DateTime.makeUnsafe("2026-11-21T10:00:00.000Z")
const transactionId = "1JXX657P9VCKN74WVFNBH75GWR"

describe("secret hygiene", () => {
  it("the sentinels are really there to be found", () => {
    // the check is meaningful: a plain rendering does show them
    expect(JSON.stringify(Schema.encodeSync(Card.Card)(card))).toContain(SENTINEL_CARD)
    expect(util.inspect({ cardNumber: SENTINEL_CARD })).toContain(SENTINEL_CARD)
  })

  it("Card", () => {
    expectNoSecret(card, "Card")
    expectNoSecret(card.cardNumber, "Card.cardNumber")
    expectNoSecret(card.pinNumber, "Card.pinNumber")
    expect(card.masked).toBe("****2345")
  })

  it("QuoteRequest: Redacted in memory, plain only on the wire", () => {
    const request = new Quote.QuoteRequest({ card })
    expectNoSecret(request, "QuoteRequest")
    const wire = Schema.encodeSync(Quote.QuoteRequest)(request)
    expect(wire.card.cardNumber).toBe(SENTINEL_CARD)
    expect(wire.card.pinNumber).toBe(SENTINEL_PIN)
    expectNoSecret(Schema.decodeUnknownSync(Quote.QuoteRequest)(wire), "decoded QuoteRequest")
  })

  it("TransactionStatus with an echoed request", () => {
    const status = Schema.decodeUnknownSync(Transaction.TransactionStatus)(sampleStatus)
    expectNoSecret(status, "TransactionStatus")
    expectNoSecret(status.request, "TransactionStatus.request")
  })

  it("every event, Submitted with the masked card", () => {
    const status = Schema.decodeUnknownSync(Transaction.TransactionStatus)(sampleStatus)
    const base = { transactionId, timestamp }
    const events: ReadonlyArray<QuoteEvent.QuoteEvent> = [
      new QuoteEvent.Submitted({
        ...base,
        requestId: "0123456789abcdef0123456789abcdef",
        card: card.masked,
        productLineId: card.productLineId
      }),
      new QuoteEvent.Progress({ ...base, percentComplete: 100, steps: status.steps! }),
      new QuoteEvent.StepCompleted({ ...base, descriptionTag: "exchange.svc.fraud.check" }),
      new QuoteEvent.Retrying({ ...base, attempt: 1, delay: Duration.seconds(1), reason: "HTTP 503" }),
      new QuoteEvent.Completed({ ...base, quote: Option.getOrThrow(Quote.toCompleted(status.response)) }),
      new QuoteEvent.Failed({
        ...base,
        error: Errors.fromResponse({
          status: 400,
          headers: {},
          body: errorBody("exchange.invalid.card", `card ${SENTINEL_CARD} refused`, `Card ${SENTINEL_CARD} is invalid`)
        })
      }),
      new QuoteEvent.Failed({
        ...base,
        error: Result.getFailure(Card.validateResult({ cardNumber: `${SENTINEL_CARD}\n`, pinNumber: "" })).pipe(
          Option.getOrThrow
        )
      })
    ]
    for (const event of events) {
      expectNoSecret(event, event._tag)
      expectNoSecret(QuoteEvent.encode(event), `encoded ${event._tag}`)
      expect(JSON.stringify(QuoteEvent.encode(event))).not.toContain(SENTINEL_CARD)
    }
    expect(QuoteEvent.encode(events[0]!)).toMatchObject({ card: "****2345" })
  })

  it("InvalidCardInput errors, for every field and every reason", () => {
    const bad = [
      { cardNumber: `${SENTINEL_CARD}\u0000`, pinNumber: SENTINEL_PIN, productLineId: "pl" },
      { cardNumber: SENTINEL_CARD.repeat(4), pinNumber: SENTINEL_PIN, productLineId: "pl" },
      { cardNumber: SENTINEL_CARD, pinNumber: `${SENTINEL_PIN}\u007f`, productLineId: "pl" },
      { cardNumber: SENTINEL_CARD, pinNumber: SENTINEL_PIN.repeat(5), productLineId: "pl" },
      { cardNumber: SENTINEL_CARD, pinNumber: SENTINEL_PIN, productLineId: "" },
      { cardNumber: SENTINEL_CARD, pinNumber: SENTINEL_PIN, productLineId: `${SENTINEL_CARD}\n${SENTINEL_PIN}` }
    ]
    for (const input of bad) {
      const error = Option.getOrThrow(Result.getFailure(Card.validateResult(input)))
      expectNoSecret(error, `InvalidCardInput ${error.field}`)
      expectNoSecret(Schema.encodeSync(Errors.QuoteFailure)(error), "encoded InvalidCardInput")
    }
  })

  it("a server Error whose Message and UserMessage echo the card number", () => {
    const error = Errors.fromResponse({
      status: 400,
      headers: { "svc-trace-id": "t" },
      body: errorBody(
        "exchange.invalid.card",
        `Merchant refused card ${SENTINEL_CARD}`,
        `The card ${SENTINEL_CARD} was not accepted`
      )
    })
    expect(error.message).toBe("Merchant refused card ****2345")
    expect(error.userMessage).toBe("The card ****2345 was not accepted")
    expectNoSecret(error, "InvalidCard")
    expectNoSecret(Schema.encodeSync(Errors.QuoteFailure)(error), "encoded InvalidCard")
    const unknown = Errors.fromResponse({
      status: 422,
      headers: {},
      body: JSON.stringify({
        errorCode: "exchange.whatever",
        message: `x${SENTINEL_CARD}x`,
        userMessage: SENTINEL_CARD
      })
    })
    expect(unknown._tag).toBe("UnknownServiceError")
    expectNoSecret(unknown, "UnknownServiceError")
  })

  it("a server Error whose ErrorCode and MoreInfoUrl echo the card number", () => {
    const error = Errors.fromResponse({
      status: 400,
      headers: {},
      body: errorBody(
        `exchange.invalid.card.${SENTINEL_CARD}`,
        "refused",
        "refused",
        { MoreInfoUrl: `https://partner.example/errors?card=${SENTINEL_CARD}` }
      )
    })
    expect(error.errorCode).toBe("exchange.invalid.card.****2345")
    expect(error.moreInfoUrl).toBe("https://partner.example/errors?card=****2345")
    expectNoSecret(error, error._tag)
    expectNoSecret(Schema.encodeSync(Errors.QuoteFailure)(error), `encoded ${error._tag}`)
    // a documented code is still classified as sent, its MoreInfoUrl scrubbed too
    const known = Errors.fromResponse({
      status: 400,
      headers: {},
      body: errorBody("exchange.invalid.card", "refused", "refused", {
        MoreInfoUrl: `https://partner.example/cards/${SENTINEL_CARD}/why`
      })
    })
    expect(known).toBeInstanceOf(Errors.InvalidCard)
    expect(known.errorCode).toBe("exchange.invalid.card")
    expect(known.moreInfoUrl).toBe("https://partner.example/cards/****2345/why")
    expectNoSecret(known, "InvalidCard")
    // lower-case keys (the live service's other spelling) are scrubbed the same way
    const lower = Errors.fromResponse({
      status: 422,
      headers: {},
      body: JSON.stringify({ errorCode: `x.${SENTINEL_CARD}`, message: "m", moreInfoUrl: `u${SENTINEL_CARD}` })
    })
    expectNoSecret(lower, lower._tag)
  })

  it("UnexpectedResponse from a TransactionStatus body that fails to decode names paths, never values", () => {
    const bodies = [
      { ...sampleStatus, response: { ...sampleStatus.response, isCompleted: SENTINEL_CARD } },
      { ...sampleStatus, request: { card: { cardNumber: Number(SENTINEL_CARD), pinNumber: SENTINEL_PIN } } },
      {
        ...sampleStatus,
        request: { card: { cardNumber: SENTINEL_CARD, pinNumber: [SENTINEL_PIN], productLineId: 1 } }
      },
      { ...sampleStatus, response: SENTINEL_CARD, request: SENTINEL_PIN },
      { ...sampleStatus, steps: [{ descriptionTag: SENTINEL_PIN, isCompleted: SENTINEL_CARD }] },
      { ...sampleStatus, createdTimestamp: SENTINEL_CARD, completionTime: SENTINEL_PIN }
    ]
    for (const body of bodies) {
      const decoded = Schema.decodeUnknownResult(Transaction.TransactionStatus, { errors: "all" })(body)
      expect(Result.isFailure(decoded)).toBe(true)
      const parseError = Option.getOrThrow(Result.getFailure(decoded))
      const error = Errors.unexpectedResponse({ httpStatus: 200, traceId: "t", transactionId }, parseError)
      expect(error._tag).toBe("UnexpectedResponse")
      expect(error.message).toMatch(/^the service's answer did not decode: /)
      expect(error.message).toMatch(/(response|request|steps|createdTimestamp)/)
      expectNoSecret(error, "UnexpectedResponse")
      expectNoSecret(Redaction.describeParseIssue(parseError.issue, 50), "describeParseIssue")
    }
    // while Schema's own message would have echoed the value, once the issue holds it (Effect 4 keeps the
    // input on an issue only with `reportInput: true`)
    const raw = Schema.decodeUnknownResult(Transaction.TransactionStatus, { reportInput: true })(bodies[0])
    expect(Option.getOrThrow(Result.getFailure(raw)).message).toContain(SENTINEL_CARD)
    const reported = Option.getOrThrow(Result.getFailure(raw))
    expectNoSecret(Errors.unexpectedResponse({ httpStatus: 200 }, reported), "UnexpectedResponse (reportInput)")
  })

  it("UnexpectedResponse from fromResponse names paths, never values", () => {
    const error = Errors.fromResponse({
      status: 400,
      headers: {},
      body: JSON.stringify({ ErrorCode: Number(SENTINEL_CARD), Message: [SENTINEL_PIN], card: SENTINEL_CARD })
    })
    expect(error._tag).toBe("UnexpectedResponse")
    expect(error.message).toContain("ErrorCode")
    expectNoSecret(error, "UnexpectedResponse")
  })
})
