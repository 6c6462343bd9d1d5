/**
 * A quote as the gateway shows it (`GET /v1/quotes/{id}`, the terminal
 * webhook's `data`): its status, progress and outcome, without card data.
 *
 * CONTRACT (lead, 2026-11-25): the schema is shared by the API, the event
 * stream and the webhooks; change it only with the lead.
 */
import * as Schema from "effect/Schema"

/** Where a quote is: accepted and running, or ended one way or the other. */
export const Status = Schema.Literals(["pending", "completed", "failed"])

/** A quote's status. */
export type Status = typeof Status.Type

/** An amount as the gateway writes it: a decimal string and its ISO 4217 currency. */
export const Amount = Schema.Struct({
  amount: Schema.String,
  currency: Schema.String
})

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
  percentComplete: Schema.Number,
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
