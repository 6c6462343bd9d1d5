/**
 * Wire encodings shared by every resource: timestamps, money and numbers, read
 * tolerantly (service-notes.md, "Reading rule") and written back canonically.
 */
import * as BigDecimal from "effect/BigDecimal"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaIssue from "effect/SchemaIssue"

/**
 * An ISO 8601 timestamp, decoded to `DateTime.Utc` and encoded back as ISO 8601
 * UTC with milliseconds (`2026-11-21T10:00:00.000Z`). A timestamp without a
 * zone is read as UTC.
 */
export const Timestamp = Schema.DateTimeUtcFromString

/**
 * A finite JSON number. The live service sends numbers where the spec says
 * integer, so any finite number is accepted.
 */
export const WireNumber = Schema.Finite

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

/** What a refused amount is told: the bounds, never the value. */
const amountExpected = "an amount of at least 0 with at most 12 integer digits and 4 decimal places"

/**
 * A decimal amount of money: a JSON number (or a numeric string, which some
 * gateways send) decoded to `BigDecimal`, never a float; encoded back as a JSON
 * number. Only amounts a card can carry decode: at least 0, at most 12 integer
 * digits and 4 decimal places, written in plain decimal notation (`-0`,
 * `-12.5`, `1e-7` and `1e400` are refused).
 */
export const Money: Schema.Codec<BigDecimal.BigDecimal, number | string> = Schema.Union([Schema.Number, Schema.String])
  .pipe(
    Schema.decodeTo(Schema.BigDecimal, {
      decode: SchemaGetter.transformEffect((input: number | string, options) =>
        Option.match(parseAmount(input), {
          onNone: () => Effect.fail(new SchemaIssue.InvalidValue({ expected: amountExpected }, input, options)),
          onSome: Effect.succeed
        })
      ),
      encode: SchemaGetter.transform(BigDecimal.toNumberUnsafe)
    }),
    Schema.annotate({ identifier: "Money" })
  )

/**
 * An optional field that the live service may leave out or send as `null`;
 * both decode to an absent key, and an absent key encodes to an absent key.
 */
export const optional = <S extends Schema.Top>(schema: S) =>
  Schema.optionalKey(Schema.NullOr(schema)).pipe(
    Schema.decodeTo(Schema.optionalKey(Schema.toType(schema)), {
      decode: SchemaGetter.transformOptional(Option.filter(Predicate.isNotNull)),
      encode: SchemaGetter.passthrough()
    })
  )
