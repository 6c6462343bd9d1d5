import { describe, expect, it } from "@effect/vitest"
import { Errors, Quote, QuoteEvent, Transaction } from "@gcx/core"
import { BigDecimal, DateTime, Duration, Effect, Equal, Option, Schema } from "effect"
import * as fc from "fast-check"
import {
  completedWireArb,
  errorBody,
  expectRoundTrip,
  failedWireArb,
  json,
  overTheWire,
  progressWireArb,
  prop,
  quoteEventWireArb,
  quoteFailureWireArb,
  retryingWireArb,
  sampleStatus,
  stepCompletedWireArb,
  submittedWireArb
} from "./fixtures.js"

const runs = { numRuns: 200 }

/**
 * Wire JSON → event → JSON is the identity, and event → JSON → event gives an
 * equal event (by `Equal` where the event has no arrays, and by its JSON form always).
 */
const expectEventRoundTrip = (wire: unknown) => {
  const event = expectRoundTrip(QuoteEvent.QuoteEvent, wire)
  const encoded = QuoteEvent.encode(event)
  const again = Schema.decodeUnknownSync(QuoteEvent.QuoteEvent)(overTheWire(encoded))
  expect(again._tag).toBe(event._tag)
  expect(again.constructor).toBe(event.constructor)
  expect(json(QuoteEvent.encode(again))).toEqual(json(encoded))
  if (again._tag !== "Progress") expect(Equal.equals(again, event)).toBe(true)
  return event
}

describe("round trip of every event (wire JSON → event → wire JSON)", () => {
  prop("Submitted", { wire: submittedWireArb }, ({ wire }) => {
    expect(expectEventRoundTrip(wire)).toBeInstanceOf(QuoteEvent.Submitted)
  }, runs)

  prop("Progress", { wire: progressWireArb }, ({ wire }) => {
    const event = expectEventRoundTrip(wire)
    expect(event).toBeInstanceOf(QuoteEvent.Progress)
    if (event._tag === "Progress") { for (const step of event.steps) expect(step).toBeInstanceOf(Transaction.Step) }
  }, runs)

  prop("StepCompleted", { wire: stepCompletedWireArb }, ({ wire }) => {
    expect(expectEventRoundTrip(wire)).toBeInstanceOf(QuoteEvent.StepCompleted)
  }, runs)

  prop("Retrying", { wire: retryingWireArb }, ({ wire }) => {
    const event = expectEventRoundTrip(wire)
    expect(event).toBeInstanceOf(QuoteEvent.Retrying)
    if (event._tag === "Retrying") expect(Duration.toMillis(event.delay)).toBe(wire.delay)
  }, runs)

  prop("Completed", { wire: completedWireArb }, ({ wire }) => {
    const event = expectEventRoundTrip(wire)
    expect(event).toBeInstanceOf(QuoteEvent.Completed)
    if (event._tag === "Completed") {
      expect(BigDecimal.isBigDecimal(event.quote.actualCardValue)).toBe(true)
      expect(BigDecimal.isBigDecimal(event.quote.exchangeCardValue)).toBe(true)
    }
  }, runs)

  prop("Failed, with every error class", { wire: failedWireArb }, ({ wire }) => {
    const event = expectEventRoundTrip(wire)
    expect(event).toBeInstanceOf(QuoteEvent.Failed)
    if (event._tag === "Failed") {
      expect(event.error._tag).toBe(wire.error._tag)
      expect(event.error).toBeInstanceOf(Error)
    }
  }, runs)

  prop("any event", { wire: quoteEventWireArb }, ({ wire }) => {
    expectEventRoundTrip(wire)
  }, runs)

  prop("QuoteFailure alone", { wire: quoteFailureWireArb }, ({ wire }) => {
    const error = expectRoundTrip(Errors.QuoteFailure, wire)
    expect(error._tag).toBe(wire._tag)
    expect(Errors.Traits[error._tag]).toBeDefined()
  }, runs)

  it("the generators reach every error class", () => {
    const tags = new Set(fc.sample(quoteFailureWireArb, 2000).map((wire) => wire._tag))
    expect(tags.size).toBe(Object.keys(Errors.Traits).length)
  })
})

describe("events built in memory", () => {
  const timestamp = DateTime.makeUnsafe("2026-11-21T10:00:03.250Z")
  const transactionId = "1JXX657P9VCKN74WVFNBH75GWR"
  const status = Schema.decodeUnknownSync(Transaction.TransactionStatus)(sampleStatus)

  const events: ReadonlyArray<QuoteEvent.QuoteEvent> = [
    new QuoteEvent.Submitted({
      transactionId,
      timestamp,
      requestId: "0123456789abcdef0123456789abcdef",
      location: `https://api.example/prod/v3/exchange/quote/${transactionId}`,
      traceId: "trace-1",
      card: status.request!.card.masked,
      productLineId: status.request!.card.productLineId,
      percentComplete: 0,
      expectedCompletionTime: 3000
    }),
    new QuoteEvent.Progress({ transactionId, timestamp, percentComplete: 50, steps: status.steps! }),
    new QuoteEvent.StepCompleted({
      transactionId,
      timestamp,
      descriptionTag: status.steps![0]!.descriptionTag,
      completionTime: status.steps![0]!.completionTime!
    }),
    new QuoteEvent.Retrying({ transactionId, timestamp, attempt: 2, delay: Duration.millis(1500), reason: "HTTP 503" }),
    new QuoteEvent.Completed({
      transactionId,
      timestamp,
      quote: Option.getOrThrow(Quote.toCompleted(status.response))
    }),
    ...[
      Errors.fromResponse({ status: 400, headers: {}, body: errorBody("exchange.invalid.card", "m", "Bad PIN") }),
      Errors.fromResponse({ status: 400, headers: {}, body: errorBody("exchange.card.merchant.unavailable", "m") }),
      Errors.fromResponse({ status: 409, headers: { "svc-trace-id": "t" }, body: errorBody("exchange.new.thing") }),
      Errors.fromResponse({ status: 503, headers: { "retry-after": "2" }, body: "<html></html>" }),
      Errors.fromResponse({ status: 404, headers: {}, body: "not json" }),
      new Errors.TransportError({ message: "connect ECONNREFUSED", reason: "Connect", attempts: 3 }),
      new Errors.PollTimeout({ transactionId, deadlineMillis: 120_000, polls: 30, lastPercentComplete: 50 }),
      new Errors.TokenError({ message: "invalid_client", httpStatus: 400, oauthError: "invalid_client" }),
      new Errors.InvalidCardInput({ field: "card.pinNumber", reason: "must not be empty" }),
      new Errors.CardDecryptionError({ requestId: "r-1", reason: "sealed with another key", keyId: "0a1b2c3d" }),
      new Errors.RequestIdConflict({ requestId: "r-1" })
    ].map((error) => new QuoteEvent.Failed({ transactionId, timestamp, error }))
  ]

  it("every event carries transactionId and timestamp in its JSON", () => {
    for (const event of events) {
      const encoded = QuoteEvent.encode(event) as { transactionId: string; timestamp: string; _tag: string }
      expect(encoded._tag).toBe(event._tag)
      expect(encoded.transactionId).toBe(transactionId)
      expect(encoded.timestamp).toBe("2026-11-21T10:00:03.250Z")
    }
  })

  it.effect("encode to JSON text and decode back without loss", () =>
    Effect.gen(function*() {
      for (const event of events) {
        const text = JSON.stringify(QuoteEvent.encode(event))
        const decoded = yield* QuoteEvent.decode(JSON.parse(text))
        expect(decoded.constructor).toBe(event.constructor)
        expect(JSON.stringify(QuoteEvent.encode(decoded))).toBe(text)
        if (event._tag !== "Progress") expect(Equal.equals(decoded, event), event._tag).toBe(true)
      }
    }))

  it("Completed carries the BigDecimal values as JSON numbers", () => {
    const completed = events.find((event) => event._tag === "Completed")!
    expect(QuoteEvent.encode(completed)).toMatchObject({
      quote: { transactionId, actualCardValue: 25.5, exchangeCardValue: 21.68 }
    })
  })

  it("Failed carries the typed error as data, class and fields intact", () => {
    const failed = events.filter((event): event is QuoteEvent.Failed => event._tag === "Failed")
    for (const event of failed) {
      const decoded = Schema.decodeUnknownSync(QuoteEvent.Failed)(json(QuoteEvent.encode(event)))
      expect(decoded.error.constructor).toBe(event.error.constructor)
      expect(decoded.error.message).toBe(event.error.message)
      expect(Errors.groupOf(decoded.error)).toBe(Errors.groupOf(event.error))
    }
    const invalidCard = Schema.decodeUnknownSync(QuoteEvent.Failed)(json(QuoteEvent.encode(failed[0]!)))
    expect(invalidCard.error).toMatchObject({ _tag: "InvalidCard", userMessage: "Bad PIN", httpStatus: 400 })
    expect(QuoteEvent.encode(failed[2]!)).toMatchObject({
      error: { _tag: "UnknownServiceError", errorCode: "exchange.new.thing", httpStatus: 409, traceId: "t" }
    })
  })

  it("Retrying encodes its delay in milliseconds", () => {
    expect(QuoteEvent.encode(events[3]!)).toMatchObject({ _tag: "Retrying", attempt: 2, delay: 1500 })
  })

  it("isTerminal holds for Completed and Failed only", () => {
    expect(events.map((event) => [event._tag, QuoteEvent.isTerminal(event)])).toEqual([
      ["Submitted", false],
      ["Progress", false],
      ["StepCompleted", false],
      ["Retrying", false],
      ["Completed", true],
      ...events.slice(5).map(() => ["Failed", true])
    ])
  })
})

describe("QuoteEvent.decode", () => {
  it.effect("fails with a SchemaError on what is not an event", () =>
    Effect.gen(function*() {
      for (
        const junk of [
          null,
          "Submitted",
          {},
          { _tag: "Unknown", transactionId: "T", timestamp: "2026-01-01T00:00:00.000Z" },
          { _tag: "Submitted", transactionId: "T", timestamp: "not a time", requestId: "r" },
          { _tag: "Progress", transactionId: "T", timestamp: "2026-01-01T00:00:00.000Z", percentComplete: 5 },
          { _tag: "Retrying", transactionId: "T", timestamp: "2026-01-01T00:00:00.000Z", attempt: 1, delay: -1 },
          {
            _tag: "Retrying",
            transactionId: "T",
            timestamp: "2026-01-01T00:00:00.000Z",
            attempt: 1,
            delay: -1,
            reason: "HTTP 503"
          },
          {
            _tag: "Completed",
            transactionId: "T",
            timestamp: "2026-01-01T00:00:00.000Z",
            quote: { transactionId: "T" }
          },
          { _tag: "Failed", transactionId: "T", timestamp: "2026-01-01T00:00:00.000Z", error: { _tag: "Nope" } }
        ]
      ) {
        const error = yield* Effect.flip(QuoteEvent.decode(junk))
        expect(Schema.isSchemaError(error)).toBe(true)
      }
    }))
})
