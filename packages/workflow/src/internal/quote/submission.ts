/**
 * The persisted result of the submit activity, and how much of the service's
 * completion hint is left of it when the outcome is polled.
 */
import * as Quote from "@gcx/core/Quote"
import * as PollSchedule from "@gcx/poller/PollSchedule"
import type * as QuotePoller from "@gcx/poller/QuotePoller"
import type * as Duration from "effect/Duration"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"

/** How a runner runs its quotes: how it polls them, and when it sends again a POST whose transaction may exist or that met an outage. */
export interface Options extends Omit<QuotePoller.TrackOptions, "expectedCompletionTime"> {
  /**
   * The pauses before the submit activity runs again after its POST failed
   * while an attempt may have created the transaction (`Errors.postResumption`),
   * or while the service was out (`Errors.isOutage`: no answer, a 503, a 429,
   * a 5xx): one run more per pause, on a durable timer. Each pause is up to a
   * fifth longer at random, and never shorter than the service's `Retry-After`. Default: 30 s, then 5 min
   * (3 runs at most). Empty: the quote fails at the first such failure. Each
   * from 0 to 1 day: another throws a `RangeError` when the layer is called.
   */
  readonly resumeDelays?: ReadonlyArray<Duration.Input> | undefined
}

/** The persisted result of the submit activity: the transaction, and the quote when the POST answered it completed. */
export class Submission extends Schema.Class<Submission>("@gcx/workflow/Submission")({
  transactionId: Schema.String,
  expectedCompletionTime: Schema.optional(Schema.Number),
  /** When the POST was answered (epoch milliseconds): the hint counts from here, also after a replay. */
  submittedAt: Schema.optional(Schema.Number),
  completed: Schema.optional(Quote.CompletedQuote)
}) {}

/**
 * The service's hint less the time since the POST was answered, never below
 * zero: a quote resumed on another runner after a crash polls at once when
 * its hint has passed, instead of waiting a whole hint again.
 */
export const remainingHint = (submission: Submission, now: number, options: Options = {}): number | undefined => {
  const hint = submission.expectedCompletionTime
  if (hint === undefined || submission.submittedAt === undefined || Schedule.isSchedule(options.schedule)) return hint
  const unit = options.schedule?.hintUnit ?? PollSchedule.defaults.hintUnit
  const elapsed = Math.max(0, now - submission.submittedAt) / (unit === "seconds" ? 1000 : 1)
  return Math.max(0, hint - elapsed)
}
