/**
 * What a tracked transaction remembers between polls, and the events each
 * answer gives rise to. Events are built from decoded, typed values, so their
 * constructors skip re-validation (`disableChecks`): the values were checked
 * when the answer was decoded, and checking them again on every event is
 * wasted work on the poller's hot path.
 */
import { Errors, Quote, QuoteEvent } from "@gcx/core"
import type { Transaction } from "@gcx/core"
import type * as DateTime from "effect/DateTime"
import * as Option from "effect/Option"

/** What the tracker remembers between polls, to emit only what changed. */
export interface Tracking {
  readonly transactionId: string
  readonly percentComplete: Option.Option<number>
  readonly completedSteps: ReadonlySet<string>
  readonly stepsSeen: number
}

const noSteps: ReadonlySet<string> = new Set()

/** Constructor options of events built from typed values. */
const disableChecks = { disableChecks: true } as const

/** The tracking state before the first answer. */
export const initial = (transactionId: string): Tracking => ({
  transactionId,
  percentComplete: Option.none(),
  completedSteps: noSteps,
  stepsSeen: 0
})

/** The events an answer gives rise to, the new state, and whether the quote is over. */
export interface Observed {
  readonly tracking: Tracking
  readonly events: ReadonlyArray<QuoteEvent.QuoteEvent>
  readonly done: boolean
}

/** The percentage an answer reports: the status's own, else its quote's, else 0. */
export const percentOf = (status: Transaction.TransactionStatus): number =>
  status.percentComplete ?? status.response.percentComplete ?? (status.response.isCompleted ? 100 : 0)

/**
 * Compares an answer with what was seen before and returns the events to emit:
 * `Progress` when the percentage or a step changed, `StepCompleted` once per
 * step, and `Completed` (or `Failed` for a completed quote without its values)
 * when `isCompleted` is true.
 */
export const observe = (
  tracking: Tracking,
  status: Transaction.TransactionStatus,
  timestamp: DateTime.Utc
): Observed => {
  const { transactionId } = tracking
  const steps = status.steps ?? []
  const percentComplete = percentOf(status)
  const newlyCompleted = steps.filter((step) => step.isCompleted && !tracking.completedSteps.has(step.descriptionTag))
  const changed = Option.match(tracking.percentComplete, {
    onNone: () => true,
    onSome: (previous) => previous !== percentComplete
  }) || newlyCompleted.length > 0 || steps.length !== tracking.stepsSeen
  const events: Array<QuoteEvent.QuoteEvent> = []
  if (changed) {
    events.push(
      new QuoteEvent.Progress({
        transactionId,
        timestamp,
        percentComplete,
        steps,
        ...(status.response.expectedCompletionTime !== undefined
          ? { expectedCompletionTime: status.response.expectedCompletionTime }
          : {})
      }, disableChecks)
    )
  }
  for (const step of newlyCompleted) {
    events.push(
      new QuoteEvent.StepCompleted({
        transactionId,
        timestamp,
        descriptionTag: step.descriptionTag,
        ...(step.completionTime !== undefined ? { completionTime: step.completionTime } : {})
      }, disableChecks)
    )
  }
  const next: Tracking = {
    transactionId,
    percentComplete: Option.some(percentComplete),
    completedSteps: new Set([...tracking.completedSteps, ...newlyCompleted.map((step) => step.descriptionTag)]),
    stepsSeen: steps.length
  }
  if (!status.response.isCompleted) return { tracking: next, events, done: false }
  events.push(terminalFor(transactionId, status.response, timestamp))
  return { tracking: next, events, done: true }
}

/**
 * The terminal event of a quote that says `isCompleted`: `Completed` with its
 * values, or `Failed` when the service left them out (spec section 3 forbids
 * using values of a quote that is not complete, and gives none to use here).
 */
export const terminalFor = (
  transactionId: string,
  response: Quote.QuoteResponse,
  timestamp: DateTime.Utc
): QuoteEvent.Completed | QuoteEvent.Failed =>
  Option.match(Quote.toCompleted(response), {
    onSome: (quote) => new QuoteEvent.Completed({ transactionId, timestamp, quote }, disableChecks),
    onNone: () =>
      new QuoteEvent.Failed({
        transactionId,
        timestamp,
        error: Errors.unexpectedResponse(
          { transactionId },
          "a completed quote without actualCardValue or exchangeCardValue"
        )
      }, disableChecks)
  })
