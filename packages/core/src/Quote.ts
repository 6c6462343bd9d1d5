/**
 * The quote resources of spec sections 2.1 and 2.2, and the completed quote
 * that the SDK hands to callers once `isCompleted` is true (spec section 3).
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Card } from "./Card.js"
import type { Shape } from "./TolerantReader.js"
import { Money, optional, Timestamp, WireNumber } from "./Wire.js"

/** The body of the POST quote (spec 2.1). */
export class QuoteRequest extends Schema.Class<QuoteRequest>("@gcx/core/QuoteRequest")({
  card: Card
}) {}

/**
 * The quote as the service reports it (spec 2.2). Only `transactionId` and
 * `isCompleted` are required: the live service leaves the values out of a quote
 * that is not complete yet. The card values may be used only when
 * `isCompleted` is true; use `toCompleted` to get them.
 */
export class QuoteResponse extends Schema.Class<QuoteResponse>("@gcx/core/QuoteResponse")({
  transactionId: Schema.String,
  isCompleted: Schema.Boolean,
  percentComplete: optional(WireNumber),
  actualCardValue: optional(Money),
  exchangeCardValue: optional(Money),
  responseTimestamp: optional(Timestamp),
  expectedCompletionTime: optional(WireNumber)
}) {}

/**
 * The optional hints of a `QuoteResponse` that the SDK does without when it
 * cannot read them (`TolerantReader`): the card values and the ids are not among them.
 */
export const responseHints: Shape = {
  hints: { percentComplete: WireNumber, responseTimestamp: Timestamp, expectedCompletionTime: WireNumber }
}

/** A quote whose check is complete: the card's balance and the value offered for it. */
export class CompletedQuote extends Schema.Class<CompletedQuote>("@gcx/core/CompletedQuote")({
  transactionId: Schema.String,
  actualCardValue: Money,
  exchangeCardValue: Money,
  responseTimestamp: optional(Timestamp)
}) {}

/**
 * The completed quote, if and only if the response says `isCompleted` and
 * carries both card values (spec section 3).
 */
export const toCompleted = (response: QuoteResponse): Option.Option<CompletedQuote> =>
  response.isCompleted && response.actualCardValue !== undefined && response.exchangeCardValue !== undefined
    ? Option.some(
      new CompletedQuote({
        transactionId: response.transactionId,
        actualCardValue: response.actualCardValue,
        exchangeCardValue: response.exchangeCardValue,
        ...(response.responseTimestamp !== undefined ? { responseTimestamp: response.responseTimestamp } : {})
      }, { disableChecks: true }) // the values come from a QuoteResponse, valid already: skip the constructor's checks (CPU)
    )
    : Option.none()
