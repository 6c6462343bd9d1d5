/**
 * Wire encodings shared by every resource: timestamps, money and numbers, read
 * tolerantly (service-notes.md, "Reading rule") and written back canonically.
 */
import * as BigDecimal from "effect/BigDecimal"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * An ISO 8601 timestamp, decoded to `DateTime.Utc` and encoded back as ISO 8601
 * UTC with milliseconds (`2026-11-21T10:00:00.000Z`).
 */
export const Timestamp = Schema.DateTimeUtc

/**
 * A finite JSON number. The live service sends numbers where the spec says
 * integer, so any finite number is accepted.
 */
export const WireNumber = Schema.Number.pipe(Schema.finite())

/** A money amount as text: digits, and optionally a point and more digits. */
const amountPattern = /^(\d+)(?:\.(\d+))?$/

/** The most integer digits and decimal places an amount may have (leading and trailing zeros aside). */
export const moneyBounds = { integerDigits: 12, decimalPlaces: 4 } as const

/**
 * The amount a text or a JSON number stands for, if it is one a card can
 * carry: at least 0, at most 12 integer digits and 4 decimal places. The text
 * is checked before any `BigDecimal` is built, so that `1e-50000000` costs
 * nothing. A number is read through its shortest text (`String`), so that a
 * float that only approximates a decimal (`0.30000000000000004`) is refused.
 */
const parseAmount = (input: number | string): Option.Option<BigDecimal.BigDecimal> => {
  if (typeof input === "number" && (Object.is(input, -0) || !Number.isFinite(input))) return Option.none()
  const text = typeof input === "number" ? String(input) : input.trim()
  if (text.length > 64) return Option.none()
  const match = amountPattern.exec(text)
  if (match === null) return Option.none()
  const integer = match[1]!.replace(/^0+(?=\d)/, "")
  const fraction = (match[2] ?? "").replace(/0+$/, "")
  return integer.length <= moneyBounds.integerDigits && fraction.length <= moneyBounds.decimalPlaces
    ? BigDecimal.fromString(fraction === "" ? integer : `${integer}.${fraction}`)
    : Option.none()
}

/**
 * A decimal amount of money: a JSON number (or a numeric string, which some
 * gateways send) decoded to `BigDecimal`, never a float; encoded back as a JSON
 * number. Only amounts a card can carry decode: at least 0, at most 12 integer
 * digits and 4 decimal places, written in plain decimal notation (`-0`,
 * `-12.5`, `1e-7` and `1e400` are refused).
 */
export const Money: Schema.Schema<BigDecimal.BigDecimal, number | string> = Schema.transformOrFail(
  Schema.Union(Schema.Number, Schema.String),
  Schema.BigDecimalFromSelf,
  {
    strict: true,
    decode: (input, _, ast) =>
      Option.match(parseAmount(input), {
        onNone: () =>
          ParseResult.fail(
            new ParseResult.Type(
              ast,
              input,
              "Expected an amount of at least 0 with at most 12 integer digits and 4 decimal places"
            )
          ),
        onSome: ParseResult.succeed
      }),
    encode: (amount) => ParseResult.succeed(BigDecimal.unsafeToNumber(amount))
  }
).annotations({ identifier: "Money" })

/**
 * An optional field that the live service may leave out or send as `null`;
 * both decode to an absent key.
 */
export const optional = <S extends Schema.Schema.All>(schema: S) =>
  Schema.optionalWith(schema, { exact: true, nullable: true })
