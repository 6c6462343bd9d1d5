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

/**
 * A decimal amount of money: a JSON number (or a numeric string, which some
 * gateways send) decoded to `BigDecimal`, never a float; encoded back as a JSON
 * number.
 */
export const Money: Schema.Schema<BigDecimal.BigDecimal, number | string> = Schema.transformOrFail(
  Schema.Union(Schema.Number, Schema.String),
  Schema.BigDecimalFromSelf,
  {
    strict: true,
    decode: (input, _, ast) => {
      const parsed = typeof input === "number"
        ? BigDecimal.safeFromNumber(input)
        // `BigDecimal.fromString("")` is zero, but a blank amount is no amount
        : input.trim() === ""
        ? Option.none()
        : BigDecimal.fromString(input.trim())
      // the amount is encoded back as a JSON number: refuse what no finite number can carry ("1e400");
      // a number input is finite already (`safeFromNumber`), so only strings are checked (CPU)
      const finite = typeof input === "number"
        ? parsed
        : Option.filter(parsed, (amount) => Number.isFinite(BigDecimal.unsafeToNumber(amount)))
      return Option.match(finite, {
        onNone: () => ParseResult.fail(new ParseResult.Type(ast, input, "Expected a finite decimal amount")),
        onSome: ParseResult.succeed
      })
    },
    encode: (amount) => ParseResult.succeed(BigDecimal.unsafeToNumber(amount))
  }
).annotations({ identifier: "Money" })

/**
 * An optional field that the live service may leave out or send as `null`;
 * both decode to an absent key.
 */
export const optional = <S extends Schema.Schema.All>(schema: S) =>
  Schema.optionalWith(schema, { exact: true, nullable: true })
