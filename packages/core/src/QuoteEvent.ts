/**
 * The events of one quote, as a `Schema.TaggedClass` union: what the poller
 * emits, what `QuoteEvents` publishes and what the CLI prints as JSON lines.
 * Every event carries its transactionId and a timestamp, and encodes to JSON
 * and back without loss. Card values appear only in `Completed`.
 */
import type * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { QuoteFailure } from "./Errors.js"
import { CompletedQuote } from "./Quote.js"
import { Step } from "./Transaction.js"
import { optional, Timestamp } from "./Wire.js"

/**
 * A delay, as milliseconds on the wire: a number of at least 0. (Effect 4's
 * `Schema.DurationFromMillis` takes any number, negative ones included.)
 */
const Delay = Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)).pipe(
  Schema.decodeTo(Schema.Duration, SchemaTransformation.durationFromMillis)
)

const base = {
  transactionId: Schema.String,
  timestamp: Timestamp
}

/** The POST was accepted: the transaction exists. */
export class Submitted extends Schema.TaggedClass<Submitted>()("Submitted", {
  ...base,
  requestId: Schema.String,
  location: optional(Schema.String),
  traceId: optional(Schema.String),
  /** The masked card number (last 4 digits at most). */
  card: optional(Schema.String),
  productLineId: optional(Schema.String),
  percentComplete: optional(Schema.Number),
  expectedCompletionTime: optional(Schema.Number)
}) {}

/** The percentage or a step changed. */
export class Progress extends Schema.TaggedClass<Progress>()("Progress", {
  ...base,
  percentComplete: Schema.Number,
  steps: Schema.Array(Step),
  expectedCompletionTime: optional(Schema.Number)
}) {}

/** A processing step finished; emitted once per step. */
export class StepCompleted extends Schema.TaggedClass<StepCompleted>()("StepCompleted", {
  ...base,
  descriptionTag: Schema.String,
  completionTime: optional(Timestamp)
}) {}

/**
 * A transient failure is being retried after `delay`. `attempt` is the number
 * of the request about to be sent, counted from the first request that failed
 * in a row (the client's retries and the poller's polls alike), so it never
 * restarts during an outage. A retry of the POST comes before `Submitted`,
 * when no transaction exists yet: its `transactionId` is empty and its
 * `requestId` names the request.
 */
export class Retrying extends Schema.TaggedClass<Retrying>()("Retrying", {
  ...base,
  requestId: optional(Schema.String),
  attempt: Schema.Number,
  delay: Delay,
  reason: Schema.String
}) {}

/** What a `Retrying` event says of a failure: its tag, and its HTTP status when known (never its text). */
const reasonOf = (error: QuoteFailure): string => {
  const status = "httpStatus" in error && error.httpStatus !== undefined ? ` (HTTP ${error.httpStatus})` : ""
  return `${error._tag}${status}`
}

/**
 * A `Retrying` event: request number `attempt` is sent after `delay`, because
 * of `error` (its reason: the error's tag, and its HTTP status when known).
 * A retry of the POST, before the transaction exists, has an empty
 * `transactionId` and names its `requestId`.
 */
export const retrying = (
  fields: {
    readonly transactionId: string
    readonly timestamp: DateTime.Utc
    readonly attempt: number
    readonly delay: Duration.Duration
    readonly requestId?: string | undefined
  },
  error: QuoteFailure
): Retrying =>
  new Retrying({
    transactionId: fields.transactionId,
    timestamp: fields.timestamp,
    attempt: fields.attempt,
    delay: fields.delay,
    reason: reasonOf(error),
    ...(fields.requestId !== undefined ? { requestId: fields.requestId } : {})
  }, { disableChecks: true })

/** The quote completed: the card values may be used. */
export class Completed extends Schema.TaggedClass<Completed>()("Completed", {
  ...base,
  quote: CompletedQuote
}) {}

/** The quote ended in a typed error (card, merchant, service or timeout), carried as data. */
export class Failed extends Schema.TaggedClass<Failed>()("Failed", {
  ...base,
  error: QuoteFailure
}) {}

/** Any event of a quote. */
export const QuoteEvent = Schema.Union([Submitted, Progress, StepCompleted, Retrying, Completed, Failed])

/** Any event of a quote. */
export type QuoteEvent = typeof QuoteEvent.Type

/** The terminal events: exactly one ends every quote. */
export type Terminal = Completed | Failed

/** Whether an event ends its quote. */
export const isTerminal = (event: QuoteEvent): event is Terminal =>
  event._tag === "Completed" || event._tag === "Failed"

/** An event encoded to its JSON form. */
export const encode = Schema.encodeSync(QuoteEvent)

/** Decodes an event from its JSON form. */
export const decode = Schema.decodeUnknownEffect(QuoteEvent)
