import { describe, expect, it } from "@effect/vitest"
import { Card, Quote, Redaction, Token, Transaction, Wire } from "@gcx/core"
import { BigDecimal, DateTime, Option, Redacted, Schema } from "effect"
import * as fc from "fast-check"
import { moneyArb, prop, sampleStatus, SENTINEL_CARD, SENTINEL_PIN, timestampArb } from "./fixtures.js"

const runs = { numRuns: 200 }

describe("card number and PIN", () => {
  it("are Redacted after decode and plain after encode", () => {
    const wire = { card: { cardNumber: SENTINEL_CARD, pinNumber: SENTINEL_PIN, productLineId: "pl" } }
    const request = Schema.decodeUnknownSync(Quote.QuoteRequest)(wire)
    expect(Redacted.isRedacted(request.card.cardNumber)).toBe(true)
    expect(Redacted.isRedacted(request.card.pinNumber)).toBe(true)
    expect(Redacted.value(request.card.cardNumber)).toBe(SENTINEL_CARD)
    expect(Redacted.value(request.card.pinNumber)).toBe(SENTINEL_PIN)
    expect(request.card.productLineId).toBe("pl")
    expect(Schema.encodeSync(Quote.QuoteRequest)(request)).toEqual(wire)
  })

  it("are Redacted in the request echoed by a TransactionStatus", () => {
    const status = Schema.decodeUnknownSync(Transaction.TransactionStatus)(sampleStatus)
    expect(Redacted.isRedacted(status.request!.card.cardNumber)).toBe(true)
    expect(Redacted.isRedacted(status.request!.card.pinNumber)).toBe(true)
    expect(Schema.encodeSync(Transaction.TransactionStatus)(status).request).toEqual(sampleStatus.request)
  })

  it("the access token is Redacted too", () => {
    const token = Schema.decodeUnknownSync(Token.TokenResponse)({
      access_token: "eyJ.secret.sig",
      expires_in: 3600,
      token_type: "Bearer"
    })
    expect(Redacted.isRedacted(token.access_token)).toBe(true)
    expect(Redacted.value(token.access_token)).toBe("eyJ.secret.sig")
    expect(String(token)).not.toContain("eyJ.secret.sig")
  })
})

describe("money is BigDecimal", () => {
  it("0.1 + 0.2 is exactly 0.3", () => {
    const response = Schema.decodeUnknownSync(Quote.QuoteResponse)({
      transactionId: "T",
      isCompleted: true,
      actualCardValue: 0.1,
      exchangeCardValue: 0.2
    })
    expect(BigDecimal.isBigDecimal(response.actualCardValue)).toBe(true)
    expect(BigDecimal.isBigDecimal(response.exchangeCardValue)).toBe(true)
    expect(0.1 + 0.2).not.toBe(0.3)
    const sum = BigDecimal.sum(response.actualCardValue!, response.exchangeCardValue!)
    expect(BigDecimal.equals(sum, BigDecimal.fromStringUnsafe("0.3"))).toBe(true)
    expect(BigDecimal.format(sum)).toBe("0.3")
  })

  prop("sums of decoded amounts are exact in cents", { a: moneyArb, b: moneyArb }, ({ a, b }) => {
    const decode = Schema.decodeUnknownSync(Wire.Money)
    const sum = BigDecimal.sum(decode(a), decode(b))
    const cents = Math.round(a * 100) + Math.round(b * 100)
    expect(
      BigDecimal.equals(sum, BigDecimal.divideUnsafe(BigDecimal.fromBigInt(BigInt(cents)), BigDecimal.fromBigInt(100n)))
    )
      .toBe(true)
  }, runs)

  it("keeps every digit of a decimal string", () => {
    const amount = Schema.decodeUnknownSync(Wire.Money)("123456789012.5678")
    expect(BigDecimal.format(amount)).toBe("123456789012.5678")
  })

  it("accepts only what a card can carry: at least 0, 12 integer digits, 4 decimal places", () => {
    const decode = Schema.decodeUnknownResult(Wire.Money)
    const accepted = [0, "0", 100.5, "100.50", "0.0001", 999_999_999_999.9999, "000123.4500", " 42 "]
    for (const amount of accepted) expect([amount, decode(amount)._tag]).toEqual([amount, "Success"])
    const refused = [
      -12.5,
      "-12.5",
      "-0",
      -0,
      "1e-50000000",
      "1e400",
      1e-7,
      "0.00001",
      "1234567890123",
      1e13,
      0.1 + 0.2,
      "+5",
      ".5",
      "5.",
      "0x10",
      "",
      "NaN",
      "1".repeat(100_000)
    ]
    for (const amount of refused) expect([amount, decode(amount)._tag]).toEqual([amount, "Failure"])
  })
})

describe("timestamps are DateTime.Utc", () => {
  it("decode to DateTime.Utc and encode with milliseconds", () => {
    const status = Schema.decodeUnknownSync(Transaction.TransactionStatus)({
      createdTimestamp: "2026-11-21T10:00:00Z",
      updatedTimespamp: "2026-11-21T10:00:01.5Z",
      response: { transactionId: "T", isCompleted: false, responseTimestamp: "2026-11-21T10:00:02.000Z" }
    })
    for (const dt of [status.createdTimestamp, status.updatedTimespamp, status.response.responseTimestamp]) {
      expect(DateTime.isDateTime(dt)).toBe(true)
      expect(DateTime.isUtc(dt!)).toBe(true)
    }
    expect(DateTime.toEpochMillis(status.createdTimestamp!)).toBe(Date.UTC(2026, 10, 21, 10, 0, 0))
    const encoded = Schema.encodeSync(Transaction.TransactionStatus)(status)
    expect(encoded.createdTimestamp).toBe("2026-11-21T10:00:00.000Z")
    expect(encoded.updatedTimespamp).toBe("2026-11-21T10:00:01.500Z")
    expect(encoded.response.responseTimestamp).toBe("2026-11-21T10:00:02.000Z")
  })

  prop("encode as ISO 8601 UTC with milliseconds", { text: timestampArb }, ({ text }) => {
    const dt = Schema.decodeUnknownSync(Wire.Timestamp)(text)
    const encoded = Schema.encodeSync(Wire.Timestamp)(dt)
    expect(encoded).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(encoded).toBe(text)
  }, runs)
})

describe("Redaction.maskCardNumber", () => {
  it("shows at most the last 4 digits", () => {
    expect(Redaction.maskCardNumber(SENTINEL_CARD)).toBe("****2345")
    expect(Redaction.maskCardNumber("12345678")).toBe("****5678")
    expect(Redaction.maskCardNumber(Redacted.make(SENTINEL_CARD))).toBe("****2345")
  })

  it("shows at most half of a short value", () => {
    expect(Redaction.maskCardNumber("1234567")).toBe("****567")
    expect(Redaction.maskCardNumber("123456")).toBe("****456")
    expect(Redaction.maskCardNumber("1234")).toBe("****34")
    expect(Redaction.maskCardNumber("123")).toBe("****3")
    expect(Redaction.maskCardNumber("1")).toBe("****")
    expect(Redaction.maskCardNumber("")).toBe("****")
  })

  prop("never shows more than min(4, half) trailing characters", { value: fc.string({ maxLength: 80 }) }, ({
    value
  }) => {
    const masked = Redaction.maskCardNumber(value)
    const shown = masked.slice(4)
    expect(masked.startsWith("****")).toBe(true)
    expect(shown.length).toBeLessThanOrEqual(4)
    expect(shown.length * 2).toBeLessThanOrEqual(value.length)
    expect(value.endsWith(shown)).toBe(true)
  }, runs)

  it("Card.masked uses it", () => {
    const card = new Card.Card({
      cardNumber: Redacted.make(SENTINEL_CARD),
      pinNumber: Redacted.make(SENTINEL_PIN),
      productLineId: "pl"
    })
    expect(card.masked).toBe("****2345")
  })
})

describe("Redaction.scrubDigits", () => {
  it("masks every run of 8 or more digits and leaves shorter runs", () => {
    expect(Redaction.scrubDigits(`card ${SENTINEL_CARD} and ${SENTINEL_CARD}!`)).toBe("card ****2345 and ****2345!")
    expect(Redaction.scrubDigits("code 1234567 stays")).toBe("code 1234567 stays")
    expect(Redaction.scrubDigits("12345678")).toBe("****5678")
    expect(Redaction.scrubDigits("no digits")).toBe("no digits")
    // a card number in groups, as people write it
    expect(Redaction.scrubDigits("card 6006 0000 0000 0001 / 6006-0000-0000-0001.")).toBe("card ****0001 / ****0001.")
    expect(Redaction.scrubDigits("amex 3782 822463 10005")).toBe("amex ****0005")
    // what is not one: a date, a time, short codes; a long run among them is still masked
    expect(Redaction.scrubDigits("on 2026-11-29 at 10 30, codes 12-34 567")).toBe(
      "on 2026-11-29 at 10 30, codes 12-34 567"
    )
    expect(Redaction.scrubDigits("ref 12-12345678")).toBe("ref 12-****5678")
    // beside a date or a count: still masked
    expect(Redaction.scrubDigits("2026-11-29 6006-0000-0000-0001")).toBe("2026-11-29 ****0001")
    expect(Redaction.scrubDigits("attempt 2 6006 0000 0000 0001")).toBe("attempt 2 ****0001")
  })
})

describe("Quote.toCompleted", () => {
  const base = {
    transactionId: "T",
    actualCardValue: 25.5,
    exchangeCardValue: 21.68,
    responseTimestamp: "2026-11-21T10:00:03.250Z"
  }
  const response = (wire: Record<string, unknown>) => Schema.decodeUnknownSync(Quote.QuoteResponse)(wire)

  it("gives the completed quote when isCompleted is true and both values are present", () => {
    const completed = Quote.toCompleted(response({ ...base, isCompleted: true, percentComplete: 100 }))
    expect(Option.isSome(completed)).toBe(true)
    const quote = Option.getOrThrow(completed)
    expect(quote).toBeInstanceOf(Quote.CompletedQuote)
    expect(quote.transactionId).toBe("T")
    expect(BigDecimal.format(quote.actualCardValue)).toBe("25.5")
    expect(BigDecimal.format(quote.exchangeCardValue)).toBe("21.68")
    expect(Schema.encodeSync(Quote.CompletedQuote)(quote)).toEqual(base)
  })

  it("keeps an absent responseTimestamp absent", () => {
    const { responseTimestamp: _, ...withoutTimestamp } = base
    const quote = Option.getOrThrow(Quote.toCompleted(response({ ...withoutTimestamp, isCompleted: true })))
    expect(quote.responseTimestamp).toBeUndefined()
    expect(Schema.encodeSync(Quote.CompletedQuote)(quote)).toEqual(withoutTimestamp)
  })

  it("gives nothing while isCompleted is false, even with values", () => {
    expect(Quote.toCompleted(response({ ...base, isCompleted: false }))).toEqual(Option.none())
  })

  it("gives nothing when a value is missing", () => {
    expect(Quote.toCompleted(response({ transactionId: "T", isCompleted: true, actualCardValue: 1 })))
      .toEqual(Option.none())
    expect(Quote.toCompleted(response({ transactionId: "T", isCompleted: true, exchangeCardValue: 1 })))
      .toEqual(Option.none())
    expect(Quote.toCompleted(response({ transactionId: "T", isCompleted: true }))).toEqual(Option.none())
  })

  it("a zero balance is still a value", () => {
    const quote = Quote.toCompleted(
      response({ transactionId: "T", isCompleted: true, actualCardValue: 0, exchangeCardValue: 0 })
    )
    expect(Option.isSome(quote)).toBe(true)
  })
})
