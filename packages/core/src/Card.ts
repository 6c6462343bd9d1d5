/**
 * The gift card a partner submits: its wire form, its in-memory form (number
 * and PIN `Redacted`) and the validation that runs before any I/O.
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { InvalidCardInput } from "./Errors.js"
import { maskCardNumber } from "./Redaction.js"

/**
 * The card as it travels inside a QuoteRequest (spec 2.1). The number and PIN
 * are plain strings on the wire and `Redacted` in memory.
 */
export class Card extends Schema.Class<Card>("@gcx/core/Card")({
  cardNumber: Schema.RedactedFromValue(Schema.String),
  pinNumber: Schema.RedactedFromValue(Schema.String),
  productLineId: Schema.String
}) {
  /** The card number masked to at most its last 4 digits, safe to log and show. */
  get masked(): string {
    return maskCardNumber(this.cardNumber)
  }
}

/** What a caller hands in: plain or already `Redacted` strings for the number and PIN. */
export interface CardInput {
  readonly cardNumber: string | Redacted.Redacted<string>
  readonly pinNumber: string | Redacted.Redacted<string>
  readonly productLineId: string
}

/** The longest value accepted for any card field. */
export const MAX_FIELD_LENGTH = 64

/** The fields of a card, named as the wire names them. */
export type CardField = "card.cardNumber" | "card.pinNumber" | "card.productLineId"

// eslint-disable-next-line no-control-regex
const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** Half of a UTF-16 pair without its other half: text that has no UTF-8 form (sealed, it would change). */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * Checks one field and returns the trimmed value, or the reason it is refused.
 * The reason never contains the value itself.
 */
export const checkField = (field: CardField, raw: unknown): Result.Result<string, InvalidCardInput> => {
  const value = Redacted.isRedacted(raw) ? Redacted.value(raw) : raw
  const refuse = (reason: string) => Result.fail(new InvalidCardInput({ field, reason }))
  if (value === undefined) return refuse("is required")
  if (typeof value !== "string") return refuse("must be a string")
  const trimmed = value.trim()
  if (trimmed.length === 0) return refuse("must not be empty")
  if (trimmed.length > MAX_FIELD_LENGTH) return refuse(`must be at most ${MAX_FIELD_LENGTH} characters`)
  if (controlCharacters.test(trimmed)) return refuse("must not contain control characters")
  if (loneSurrogate.test(trimmed)) return refuse("must be valid text (a lone UTF-16 surrogate)")
  return Result.succeed(trimmed)
}

/**
 * Checks a secret field (`checkField`): the `Redacted` given when it holds the
 * value already trimmed, else a new one; so that a `Card` validated again (each
 * layer validates what it is handed) is returned as it is.
 */
const checkSecret = (field: CardField, raw: unknown): Result.Result<Redacted.Redacted<string>, InvalidCardInput> =>
  Result.map(
    checkField(field, raw),
    (trimmed) =>
      Redacted.isRedacted(raw) && Redacted.value(raw) === trimmed
        ? raw as Redacted.Redacted<string>
        : Redacted.make(trimmed)
  )

/**
 * Validates card input before any I/O: every field a non-empty string, trimmed,
 * without control characters, at most 64 characters. Fails with
 * `InvalidCardInput` naming the field, never echoing the card number or PIN.
 * A `Card` that passes unchanged is returned as it is.
 */
export const validateResult = (input: unknown): Result.Result<Card, InvalidCardInput> => {
  const record: { readonly [key: string]: unknown } = Predicate.isObject(input) ? input : {}
  return Result.all({
    cardNumber: checkSecret("card.cardNumber", record.cardNumber),
    pinNumber: checkSecret("card.pinNumber", record.pinNumber),
    productLineId: checkField("card.productLineId", record.productLineId)
  }).pipe(
    Result.map((fields) =>
      input instanceof Card && fields.cardNumber === input.cardNumber && fields.pinNumber === input.pinNumber &&
        fields.productLineId === input.productLineId
        ? input
        // The fields were just checked: skip the constructor's checks (its type checks are cheap).
        : new Card(fields, { disableChecks: true })
    )
  )
}

/** `validateResult` as an Effect. */
export const validate = (input: CardInput | unknown): Effect.Effect<Card, InvalidCardInput> =>
  Effect.fromResult(validateResult(input))
