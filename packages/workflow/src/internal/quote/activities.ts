/**
 * The two activities of a durable quote, whose results the engine persists.
 *
 * - `submit` opens the sealed card and sends the POST with the workflow's
 *   requestId, each attempt's `previousAttempts` taken from the durable
 *   counter (`SubmitAttempts`), so that a replay after a crash never repeats
 *   one. It publishes `Submitted` on the runner's `QuoteEvents` bus.
 * - `outcome` polls the persisted transaction until it is terminal, through
 *   the runner's `QuotePoller` (one record in its due queue per quote, the
 *   poller's schedule and deadline; the events go to the bus). A replay reads
 *   the persisted submission back: it resumes polling, with no second POST.
 *
 * Each activity is made once (its schemas, and the parsers compiled from them,
 * are reused by every quote) rather than once per quote: the workflow body
 * provides the quote (`CurrentPayload`, `CurrentSubmission`) around each, and
 * the engine runs the activity in the body's context.
 */
import * as Quote from "@gcx/core/Quote"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Activity from "effect/workflow/Activity"
import * as CardCipher from "../../CardCipher.js"
import * as SubmitAttempts from "../../SubmitAttempts.js"
import { DurableQuoteFailure, name, type Payload } from "./definition.js"
import { type Options, remainingHint, Submission } from "./submission.js"

/** Database failures are retried this long before the activity dies: a short outage costs no quote. */
const databaseRetry = Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("5 seconds")]).pipe(
  Schedule.upTo({ duration: "2 minutes" })
)

const nextAttempt = (attempts: SubmitAttempts.Service, requestId: string) =>
  attempts.next(requestId).pipe(Effect.retry(databaseRetry), Effect.orDie)

const submitted = (payload: Payload, created: ExchangeClient.CreatedQuote) =>
  Effect.map(DateTime.now, (timestamp) =>
    new QuoteEvent.Submitted({
      transactionId: created.transactionId,
      timestamp,
      requestId: created.requestId,
      card: payload.card.masked,
      productLineId: payload.card.productLineId,
      ...Option.match(created.location, { onNone: () => ({}), onSome: (location) => ({ location }) }),
      ...Option.match(created.traceId, { onNone: () => ({}), onSome: (traceId) => ({ traceId }) }),
      ...(created.quote.percentComplete !== undefined ? { percentComplete: created.quote.percentComplete } : {}),
      ...(created.quote.expectedCompletionTime !== undefined
        ? { expectedCompletionTime: created.quote.expectedCompletionTime }
        : {})
    }, { disableChecks: true }))

/** The quote an activity runs for, provided by the workflow body around each activity. */
class CurrentPayload extends Context.Service<CurrentPayload, Payload>()("@gcx/workflow/QuoteWorkflow/CurrentPayload") {}

/** The persisted submission the outcome activity polls for, provided like `CurrentPayload`. */
class CurrentSubmission
  extends Context.Service<CurrentSubmission, Submission>()("@gcx/workflow/QuoteWorkflow/CurrentSubmission")
{}

/** The submit activity (for the quote in `CurrentPayload`): open the card, POST with durable attempt counting, publish `Submitted`. */
const submitActivity = Activity.make({
  name: `${name}/submit`,
  success: Submission,
  error: DurableQuoteFailure,
  execute: Effect.gen(function*() {
    const payload = yield* CurrentPayload
    const cipher = yield* CardCipher.CardCipher
    const attempts = yield* SubmitAttempts.SubmitAttempts
    const client = yield* ExchangeClient.ExchangeClient
    const bus = yield* QuoteEvents.QuoteEvents
    const card = yield* cipher.open(payload.card, payload.requestId)
    const previousAttempts = yield* nextAttempt(attempts, payload.requestId)
    if (previousAttempts > 0) {
      // an earlier run sent the POST and stopped before its answer was recorded: the same requestId again
      yield* Effect.logInfo("resuming a durable quote whose POST was interrupted").pipe(
        Effect.annotateLogs({ requestId: payload.requestId, previousAttempts })
      )
    }
    const created = yield* client.createQuote(new Quote.QuoteRequest({ card }, { disableChecks: true }), {
      requestId: payload.requestId,
      previousAttempts,
      onRetry: () => Effect.asVoid(nextAttempt(attempts, payload.requestId))
    })
    yield* Effect.flatMap(submitted(payload, created), bus.publish)
    const completed = Quote.toCompleted(created.quote)
    if (Option.isSome(completed)) {
      const timestamp = yield* DateTime.now
      yield* bus.publish(
        new QuoteEvent.Completed(
          { transactionId: created.transactionId, timestamp, quote: completed.value },
          { disableChecks: true }
        )
      )
    }
    return new Submission({
      transactionId: created.transactionId,
      submittedAt: yield* Clock.currentTimeMillis,
      ...(created.quote.expectedCompletionTime !== undefined
        ? { expectedCompletionTime: created.quote.expectedCompletionTime }
        : {}),
      ...(Option.isSome(completed) ? { completed: completed.value } : {})
    }, { disableChecks: true })
  })
})

/** The submit activity of one quote: open the card, POST with durable attempt counting, publish `Submitted`. */
export const submit = (payload: Payload) => Effect.provideService(submitActivity, CurrentPayload, payload)

/** The outcome activity, made once per runner: poll the transaction in `CurrentSubmission` until it is terminal. */
const makeOutcomeActivity = (options: Options) =>
  Activity.make({
    name: `${name}/outcome`,
    success: Quote.CompletedQuote,
    error: DurableQuoteFailure,
    execute: Effect.gen(function*() {
      const submission = yield* CurrentSubmission
      const poller = yield* QuotePoller.QuotePoller
      const now = yield* Clock.currentTimeMillis
      const terminal = yield* poller.track(submission.transactionId, {
        ...options,
        expectedCompletionTime: remainingHint(submission, now, options)
      }).pipe(Stream.filter(QuoteEvent.isTerminal), Stream.runHead)
      // No terminal event: the poller stopped (its runner is shutting down); the engine runs the activity again.
      if (Option.isNone(terminal)) return yield* Effect.interrupt
      return terminal.value._tag === "Completed"
        ? terminal.value.quote
        : yield* Effect.fail(terminal.value.error)
    })
  })

/** The outcome activities of a runner: one for its polling options. */
export const outcomes = (options: Options = {}) => {
  const activity = makeOutcomeActivity(options)
  /** The outcome activity of one quote: poll its transaction until it is terminal. */
  return (submission: Submission) => Effect.provideService(activity, CurrentSubmission, submission)
}
