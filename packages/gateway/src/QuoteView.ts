/**
 * A quote as the gateway shows it (`GET /v1/quotes/{id}`, the terminal
 * webhook's `data`): its status, progress and outcome, without card data.
 *
 * CONTRACT (lead, 2026-11-25): the schema is shared by the API, the event
 * stream and the webhooks; change it only with the lead.
 */
import * as Errors from "@gcx/core/Errors"
import * as Money from "@gcx/core/Money"
import type * as Quote from "@gcx/core/Quote"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** Where a quote is: accepted and running, or ended one way or the other. */
export const Status = Schema.Literals(["pending", "completed", "failed"])

/** A quote's status. */
export type Status = typeof Status.Type

/** An amount as the gateway writes it: a decimal string with two places at least (`Money.format`), e.g. `"85.00"`. */
export const Amount = Schema.String

/** A step of the service's check, as its last progress event told it. */
export const Step = Schema.Struct({
  descriptionTag: Schema.String,
  isCompleted: Schema.Boolean,
  completionTime: Schema.optional(Schema.String)
})

/** The values of a completed quote. */
export const Outcome = Schema.Struct({
  transactionId: Schema.String,
  actualCardValue: Amount,
  exchangeCardValue: Amount
})

/**
 * Why a quote failed: gcx's error code (its tag), its recovery group, and the
 * message the service meant for the customer, when it gave one.
 */
export const Failure = Schema.Struct({
  code: Schema.String,
  group: Schema.String,
  userMessage: Schema.optional(Schema.String)
})

/** Links of a quote resource. */
export const Links = Schema.Struct({
  self: Schema.String,
  events: Schema.String
})

/** A quote resource. `outcome` only when completed, `error` only when failed. */
export const QuoteView = Schema.Struct({
  id: Schema.String,
  status: Status,
  percentComplete: Schema.Finite.annotate({ description: "How far the service says the quote is, 0 to 100" }),
  steps: Schema.Array(Step),
  outcome: Schema.optional(Outcome),
  error: Schema.optional(Failure),
  links: Links
})

/** A quote resource. */
export type QuoteView = typeof QuoteView.Type

/** The links of quote `id`. */
export const links = (id: string): typeof Links.Type => ({
  self: `/v1/quotes/${id}`,
  events: `/v1/quotes/${id}/events`
})

/** The values of a completed quote, as a quote resource shows them. */
export const outcomeOf = (quote: Quote.CompletedQuote): typeof Outcome.Type => ({
  transactionId: quote.transactionId,
  actualCardValue: Money.format(quote.actualCardValue),
  exchangeCardValue: Money.format(quote.exchangeCardValue)
})

/** Why a quote failed, as a quote resource shows it: never the service's own message, only the customer's. */
export const failureOf = (error: Errors.QuoteFailure): typeof Failure.Type => {
  const userMessage = Option.getOrUndefined(Errors.customerMessage(error))
  return {
    code: error._tag,
    group: Errors.groupOf(error),
    ...(userMessage !== undefined ? { userMessage } : {})
  }
}
