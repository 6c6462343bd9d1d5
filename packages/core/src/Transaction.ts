/**
 * The transaction status that the GET quote returns (spec 2.3), with wire names
 * spelled exactly as the service spells them (`createrid`, `updatedTimespamp`).
 */
import * as Schema from "effect/Schema"
import { QuoteRequest, QuoteResponse, responseHints } from "./Quote.js"
import type { Shape } from "./TolerantReader.js"
import { optional, Timestamp, WireNumber } from "./Wire.js"

/** The step tags the service is known to use, in the order they run. */
export const StepTags = {
  vaultCreditCard: "exchange.vault.credit.card",
  fraudCheck: "exchange.svc.fraud.check"
} as const

/** One processing step of a transaction. */
export class Step extends Schema.Class<Step>("@gcx/core/Step")({
  descriptionTag: Schema.String,
  isCompleted: Schema.Boolean,
  startTime: optional(Timestamp),
  completionTime: optional(Timestamp)
}) {}

/**
 * The status of a quote transaction (spec 2.3). Only `response` is required:
 * it carries the quote the SDK relies on; the rest is read when present.
 */
export class TransactionStatus extends Schema.Class<TransactionStatus>("@gcx/core/TransactionStatus")({
  entityid: optional(Schema.String),
  createrid: optional(WireNumber),
  createdTimestamp: optional(Timestamp),
  updatedTimespamp: optional(Timestamp),
  steps: optional(Schema.Array(Step)),
  percentComplete: optional(WireNumber),
  completionTime: optional(Timestamp),
  response: QuoteResponse,
  request: optional(QuoteRequest)
}) {}

/**
 * The optional hints of a `TransactionStatus` that the SDK does without when
 * it cannot read them (`TolerantReader`): everything but the quote's ids,
 * `isCompleted` and card values. Steps only feed progress events.
 */
export const statusHints: Shape = {
  hints: {
    entityid: Schema.String,
    createrid: WireNumber,
    createdTimestamp: Timestamp,
    updatedTimespamp: Timestamp,
    steps: Schema.Array(Step),
    percentComplete: WireNumber,
    completionTime: Timestamp,
    request: QuoteRequest
  },
  nested: { response: responseHints }
}
