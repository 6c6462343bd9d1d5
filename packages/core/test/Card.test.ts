import { describe, expect, it } from "@effect/vitest"
import { Card, Errors } from "@gcx/core"
import { Effect, Redacted, Result } from "effect"
import * as fc from "fast-check"
import { prop, SENTINEL_CARD, SENTINEL_PIN } from "./fixtures.js"

const valid = { cardNumber: SENTINEL_CARD, pinNumber: SENTINEL_PIN, productLineId: "pl-amazing-store" } as const

type Field = keyof typeof valid

const wireName: Record<Field, Card.CardField> = {
  cardNumber: "card.cardNumber",
  pinNumber: "card.pinNumber",
  productLineId: "card.productLineId"
}

/** Rejects with InvalidCardInput naming the field; the error never carries the card number or PIN. */
const expectRefused = (input: unknown, field: Card.CardField, reason: RegExp) => {
  const result = Card.validateResult(input)
  expect(Result.isFailure(result)).toBe(true)
  const error = Result.getFailure(result).pipe((o) => o._tag === "Some" ? o.value : undefined)!
  expect(error).toBeInstanceOf(Errors.InvalidCardInput)
  expect(error._tag).toBe("InvalidCardInput")
  expect(error.field).toBe(field)
  expect(error.reason).toMatch(reason)
  expect(error.message).toBe(`${field} ${error.reason}`)
  for (const text of [error.message, String(error), JSON.stringify(error), error.stack ?? ""]) {
    expect(text).not.toContain(SENTINEL_CARD)
    expect(text).not.toContain(SENTINEL_PIN)
  }
  return error
}

describe("Card.validate", () => {
  it.effect("accepts a valid card and keeps the number and PIN Redacted", () =>
    Effect.gen(function*() {
      const card = yield* Card.validate(valid)
      expect(card).toBeInstanceOf(Card.Card)
      expect(Redacted.isRedacted(card.cardNumber)).toBe(true)
      expect(Redacted.isRedacted(card.pinNumber)).toBe(true)
      expect(Redacted.value(card.cardNumber)).toBe(SENTINEL_CARD)
      expect(Redacted.value(card.pinNumber)).toBe(SENTINEL_PIN)
      expect(card.productLineId).toBe("pl-amazing-store")
    }))

  it.effect("fails in the error channel, not as a defect", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Card.validate({ ...valid, pinNumber: "" }))
      expect(error._tag).toBe("InvalidCardInput")
      expect(error.field).toBe("card.pinNumber")
      const caught = yield* Card.validate({ ...valid, cardNumber: 7 }).pipe(
        Effect.catchTag("InvalidCardInput", (e) => Effect.succeed(e.field))
      )
      expect(caught).toBe("card.cardNumber")
    }))

  it("trims every field", () => {
    const card = Result.getOrThrow(Card.validateResult({
      cardNumber: `  ${SENTINEL_CARD}\t`,
      pinNumber: `\n${SENTINEL_PIN} `,
      productLineId: " pl \r\n"
    }))
    expect(Redacted.value(card.cardNumber)).toBe(SENTINEL_CARD)
    expect(Redacted.value(card.pinNumber)).toBe(SENTINEL_PIN)
    expect(card.productLineId).toBe("pl")
  })

  it("accepts already Redacted number and PIN", () => {
    const card = Result.getOrThrow(Card.validateResult({
      cardNumber: Redacted.make(` ${SENTINEL_CARD} `),
      pinNumber: Redacted.make(SENTINEL_PIN),
      productLineId: "pl"
    }))
    expect(Redacted.value(card.cardNumber)).toBe(SENTINEL_CARD)
    expect(Redacted.value(card.pinNumber)).toBe(SENTINEL_PIN)
  })

  it("returns a valid card as it is: each layer validates what it is handed, allocating nothing again", () => {
    const card = Result.getOrThrow(Card.validateResult(valid))
    expect(Result.getOrThrow(Card.validateResult(card))).toBe(card)
    // a Card whose fields need trimming (made without validation) gives a new, trimmed one
    const untrimmed = new Card.Card({
      cardNumber: Redacted.make(SENTINEL_CARD),
      pinNumber: Redacted.make(` ${SENTINEL_PIN}`),
      productLineId: " pl "
    })
    const trimmed = Result.getOrThrow(Card.validateResult(untrimmed))
    expect(trimmed).not.toBe(untrimmed)
    expect([Redacted.value(trimmed.cardNumber), Redacted.value(trimmed.pinNumber), trimmed.productLineId])
      .toEqual([SENTINEL_CARD, SENTINEL_PIN, "pl"])
    // and an invalid one is refused, as any input
    expectRefused(
      new Card.Card({ cardNumber: Redacted.make(" "), pinNumber: card.pinNumber, productLineId: "pl" }),
      "card.cardNumber",
      /must not be empty/
    )
  })

  it("accepts exactly 64 characters, after trimming", () => {
    const card = Result.getOrThrow(Card.validateResult({ ...valid, productLineId: `  ${"p".repeat(64)}  ` }))
    expect(card.productLineId).toHaveLength(Card.MAX_FIELD_LENGTH)
    expect(Card.MAX_FIELD_LENGTH).toBe(64)
  })

  describe.each(Object.keys(valid) as Array<Field>)("field %s", (field) => {
    const name = wireName[field]
    // the sentinel makes every bad value of the number and PIN contain the secret itself
    const seed = valid[field]
    const cases: ReadonlyArray<readonly [string, unknown, RegExp]> = [
      ["empty", "", /must not be empty/],
      ["whitespace only", " \t\r\n ", /must not be empty/],
      ["too long (65)", `${seed}${"9".repeat(65 - seed.length)}`, /at most 64 characters/],
      ["far too long", seed.repeat(20), /at most 64 characters/],
      ["with \\u0000", `${seed}\u0000`, /control characters/],
      ["with \\u0000 first", `\u0000${seed}`, /control characters/],
      ["with \\n inside", `${seed.slice(0, 4)}\n${seed.slice(4)}`, /control characters/],
      ["with \\u007f", `${seed.slice(0, 2)}\u007f${seed.slice(2)}`, /control characters/],
      ["with \\u001b (escape)", `\u001b[31m${seed}`, /control characters/],
      ["with \\u0085 (C1)", `${seed}\u0085x`, /control characters/],
      ["a number", 6006123456789, /must be a string/],
      ["null", null, /must be a string/],
      ["undefined", undefined, /is required/],
      ["an object", { value: seed }, /must be a string/],
      ["an array", [seed], /must be a string/],
      ["a Redacted non-string", Redacted.make(42), /must be a string/]
    ]
    it.each(cases)(`is refused when %s`, (_, value, reason) => {
      expect(expectRefused({ ...valid, [field]: value }, name, reason).field).toBe(name)
    })

    it("is refused when missing, as required", () => {
      const { [field]: _, ...rest } = valid
      expectRefused(rest, name, /^is required$/)
    })
  })

  it("names the first bad field when several are bad", () => {
    expectRefused({ cardNumber: "", pinNumber: "", productLineId: "" }, "card.cardNumber", /empty/)
    expectRefused({ ...valid, pinNumber: "", productLineId: "" }, "card.pinNumber", /empty/)
  })

  it("refuses what is not a record", () => {
    for (const input of [null, undefined, "6006123456789012345", 42, true]) {
      expectRefused(input, "card.cardNumber", /is required/)
    }
  })

  prop(
    "accepts every visible string of 1 to 64 characters, trimmed",
    {
      cardNumber: fc.stringMatching(/^[\x21-\x7e]{1,64}$/),
      pinNumber: fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,62}[\x21-\x7e])?$/),
      pad: fc.stringMatching(/^[ \t]{0,3}$/)
    },
    ({ cardNumber, pad, pinNumber }) => {
      const card = Result.getOrThrow(Card.validateResult({
        cardNumber: `${pad}${cardNumber}${pad}`,
        pinNumber,
        productLineId: "pl"
      }))
      expect(Redacted.value(card.cardNumber)).toBe(cardNumber)
      expect(Redacted.value(card.pinNumber)).toBe(pinNumber)
    },
    { numRuns: 200 }
  )

  prop(
    "never echoes the refused value",
    { secret: fc.stringMatching(/^[0-9A-Z]{12,30}$/), junk: fc.constantFrom("\u0000", "\n", "\u007f", "x".repeat(70)) },
    ({ junk, secret }) => {
      for (const field of ["cardNumber", "pinNumber"] as const) {
        const result = Card.validateResult({ ...valid, [field]: `${secret}${junk}${secret}` })
        const error = Result.getFailure(result).pipe((o) => o._tag === "Some" ? o.value : undefined)!
        expect(error.field).toBe(wireName[field])
        expect(`${error.message} ${JSON.stringify(error)}`).not.toContain(secret)
      }
    },
    { numRuns: 100 }
  )
})

describe("Card.checkField", () => {
  it("returns the trimmed value or the refusal", () => {
    expect(Card.checkField("card.productLineId", "  pl  ")).toEqual(Result.succeed("pl"))
    const refused = Card.checkField("card.pinNumber", "")
    expect(Result.isFailure(refused)).toBe(true)
  })
})
