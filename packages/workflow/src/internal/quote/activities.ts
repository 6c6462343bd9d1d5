/**
 * The two activities of a durable quote, whose results the engine persists.
 *
 * - `submit` opens the sealed card and sends the POST with the workflow's
 *   requestId, each attempt's `previousAttempts` taken from the durable
 *   counter (`RequestIds.nextAttempt`), so that a replay after a crash never
 *   repeats one. It publishes each retry of the POST (`Retrying`, with the
 *   requestId: the quote has no transaction yet) and `Submitted` on the
 *   runner's `QuoteEvents` bus.
 *   Only the workflow recorded for the requestId (`RequestIds.register`) is
 *   let through: one run under another execution id (a `run` not submitted
 *   through `DurableQuotes`) fails with `RequestIdConflict` and sends nothing.
 *   A card that cannot be opened frees the requestId (`RequestIds.release`).
 *   A POST that failed while its transaction may exist, or while the service
 *   was out, is sent again after a pause on a durable timer, announced by a
 *   `Retrying` event (`submits`, `Options.resumeDelays`).
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
import * as Errors from "@gcx/core/Errors"
import * as Quote from "@gcx/core/Quote"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Activity from "effect/workflow/Activity"
import * as DurableClock from "effect/workflow/DurableClock"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as CardCipher from "../../CardCipher.js"
import * as RequestIds from "../../RequestIds.js"
import { DurableQuoteFailure, name, type Payload } from "./definition.js"
import { type Options, remainingHint, Submission } from "./submission.js"

/** Database failures are retried this long before the activity dies: a short outage costs no quote. */
const databaseRetry = Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("5 seconds")]).pipe(
  Schedule.upTo({ duration: "2 minutes" })
)

/** The `previousAttempts` of the next POST of the quote, or `RequestIdConflict` when this run is not the one recorded for it. */
const nextAttempt = (requestIds: RequestIds.Service, { executionId, payload }: Current) =>
  requestIds.nextAttempt(payload.requestId, executionId).pipe(
    Effect.retry(databaseRetry),
    Effect.orDie,
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new Errors.RequestIdConflict({ requestId: payload.requestId })),
      onSome: Effect.succeed
    }))
  )

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

/** A quote as its workflow runs it: its payload and its execution id. */
interface Current {
  readonly payload: Payload
  readonly executionId: string
}

/** The quote an activity runs for, provided by the workflow body around each activity. */
class CurrentPayload extends Context.Service<CurrentPayload, Current>()("@gcx/workflow/QuoteWorkflow/CurrentPayload") {}

/** The persisted submission the outcome activity polls for, provided like `CurrentPayload`. */
class CurrentSubmission
  extends Context.Service<CurrentSubmission, Submission>()("@gcx/workflow/QuoteWorkflow/CurrentSubmission")
{}

/**
 * The submit activity (for the quote in `CurrentPayload`): open the card, POST
 * with durable attempt counting, publish each retry of the POST (`Retrying`,
 * with the requestId) and `Submitted`.
 */
const submitActivity = Activity.make({
  name: `${name}/submit`,
  success: Submission,
  error: DurableQuoteFailure,
  execute: Effect.gen(function*() {
    const current = yield* CurrentPayload
    const { executionId, payload } = current
    const cipher = yield* CardCipher.CardCipher
    const requestIds = yield* RequestIds.RequestIds
    const client = yield* ExchangeClient.ExchangeClient
    const bus = yield* QuoteEvents.QuoteEvents
    const card = yield* cipher.open(payload.card, payload.requestId).pipe(
      // not this deployment's card: the requestId is free again (if this run is the one recorded for it)
      Effect.tapError(() =>
        requestIds.release(payload.requestId, executionId).pipe(Effect.retry(databaseRetry), Effect.orDie)
      )
    )
    const previousAttempts = yield* nextAttempt(requestIds, current)
    if (previousAttempts > 0) {
      // an earlier run sent the POST, and either stopped before its answer was recorded or lost its answers
      yield* Effect.logInfo("sending the POST of a durable quote again, counting its attempts on").pipe(
        Effect.annotateLogs({ requestId: payload.requestId, previousAttempts })
      )
    }
    const created = yield* client.createQuote(new Quote.QuoteRequest({ card }, { disableChecks: true }), {
      requestId: payload.requestId,
      previousAttempts,
      // counted first (durably), then told, as the poller tells a plain quote's retries
      onRetry: (info) =>
        Effect.andThen(
          Effect.ignore(nextAttempt(requestIds, current)),
          Effect.flatMap(DateTime.now, (timestamp) =>
            bus.publish(QuoteEvent.retrying(
              { transactionId: "", timestamp, attempt: info.attempt, delay: info.delay, requestId: payload.requestId },
              info.error
            )))
        )
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

/** The pauses before each run again of a POST whose transaction may exist, or that met an outage (`Options.resumeDelays`): 30 s, then 5 min. */
export const defaultResumeDelays: ReadonlyArray<Duration.Input> = ["30 seconds", "5 minutes"]

/** How much longer than its setting a pause may be, at random, so that quotes paused together are not sent together. */
const pauseJitter = 0.2

/** The longest pause of `Options.resumeDelays`: the engine's timer takes no date past JavaScript's. */
const maxResumeDelay = Duration.days(1)

/** The longest `Retry-After` a pause follows: a service that asks for more is asked again after an hour. */
const maxRetryAfterFollowed = Duration.hours(1)

/**
 * Decides, once, whether the POST of the quote is sent again after run `run`
 * failed with `error`, and after how long: `delays[run - 1]`, up to a fifth
 * longer at random (quotes paused by one outage do not come back at once),
 * and never shorter than the service's `Retry-After` (up to an hour), at most a day, in
 * milliseconds; or null once the runs are spent. An activity: a replay reads
 * the decision back, whatever the settings of the runner that replays it
 * (another runner, or this one restarted with other `resumeDelays`). A pause
 * is announced by a `Retrying` event on the bus (so the quote's followers see
 * why it waits) and a log line: at least once (a runner that dies between the
 * announcement and the decision's record announces it again).
 */
const pause = (requestId: string, run: number, delays: ReadonlyArray<Duration.Duration>, error: DurableQuoteFailure) =>
  Activity.make({
    name: `${name}/submit/pause-${run}`,
    success: Schema.NullOr(Schema.Number),
    execute: Effect.gen(function*() {
      const setting = delays[run - 1]
      if (setting === undefined) return null
      const retryAfter = Math.min(Errors.retryAfterOf(error) ?? 0, Duration.toMillis(maxRetryAfterFollowed))
      const jitter = 1 + pauseJitter * (yield* Random.next)
      const delay = Duration.millis(Math.min(
        Math.ceil(Math.max(Duration.toMillis(setting) * jitter, retryAfter)),
        Duration.toMillis(maxResumeDelay)
      ))
      const bus = yield* QuoteEvents.QuoteEvents
      const attempts = "attempts" in error && typeof error.attempts === "number" ? error.attempts : 0
      const timestamp = yield* DateTime.now
      yield* bus.publish(
        QuoteEvent.retrying({ transactionId: "", timestamp, attempt: attempts + 1, delay, requestId }, error)
      )
      yield* Effect.logInfo(
        "the POST of a durable quote failed (the service was out, or its answer was lost): it is sent again, " +
          "with the same requestId"
      ).pipe(Effect.annotateLogs({ requestId, run: run + 1, after: Duration.format(delay), reason: error._tag }))
      return Duration.toMillis(delay)
    })
  })

/** What running the submit activity again needs of the workflow body: its engine and instance, and the bus. */
type Workflow = WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance | QuoteEvents.QuoteEvents

/**
 * How the workflow runs the submit activity again after its POST failed at
 * the client's attempts cap (or its retry budget):
 * - while an attempt of it may have created the transaction
 *   (`Errors.postResumption`: an attempt got no answer, a cut or garbled one,
 *   or a 500, 502 or 504). Without this, the quote would fail and the
 *   transaction be lost;
 * - while the service was out (`Errors.isOutage`: no answer, a 503, a 429, a
 *   5xx, or its token endpoint out). Without this, a short outage of the
 *   service would fail every quote sent during it.
 * Each run takes its `previousAttempts` from the durable counter, so the
 * service answers the transaction an earlier attempt created instead of a
 * second one.
 *
 * Before each run again, the workflow pauses on a durable timer
 * (`DurableClock`: a restart neither loses nor repeats it), so that an outage
 * has time to pass; one run more per pause, each with the client's attempts
 * and backoff, so an outage costs at most `1 + delays` times the POSTs. The
 * runs are the activity's attempts (`Activity.CurrentAttempt`), as with
 * `Activity.retry`: each result is persisted apart; so is each decision
 * (`pause`).
 */
const resumePosts = (delays: ReadonlyArray<Duration.Duration>) =>
<A, R>(
  requestId: string,
  activity: Effect.Effect<A, DurableQuoteFailure, R>
): Effect.Effect<A, DurableQuoteFailure, R | Workflow> => {
  const from = (run: number): Effect.Effect<A, DurableQuoteFailure, R | Workflow> =>
    Effect.provideService(activity, Activity.CurrentAttempt, run).pipe(
      Effect.catchIf(
        (error) => Option.isSome(Errors.postResumption(error)) || Errors.isOutage(error),
        (error) =>
          Effect.flatMap(pause(requestId, run, delays, error), (millis) =>
            millis === null
              ? Effect.fail(error)
              : DurableClock.sleep({ name: `${name}/submit/resume-${run}`, duration: millis, inMemoryThreshold: 0 })
                .pipe(Effect.andThen(Effect.suspend(() => from(run + 1)))))
      )
    )
  return from(1)
}

/**
 * The pauses of `Options.resumeDelays` (default `defaultResumeDelays`), in
 * whole milliseconds; throws a `RangeError` that names the setting for one
 * that is not a duration from 0 to 1 day.
 */
const resumeDelaysOf = (options: Pick<Options, "resumeDelays">): ReadonlyArray<Duration.Duration> =>
  (options.resumeDelays ?? defaultResumeDelays).map((input, index) => {
    // (Effect reads NaN milliseconds as zero: refused here, as a setting gone wrong)
    const delay = Number.isNaN(input) ? Option.none() : Duration.fromInput(input)
    if (
      Option.isNone(delay) || Duration.isNegative(delay.value) ||
      Duration.isGreaterThan(delay.value, maxResumeDelay)
    ) {
      throw new RangeError(
        `resumeDelays[${index}] must be a duration from 0 to 1 day (e.g. "30 seconds"), got ${String(input)}`
      )
    }
    return Duration.millis(Math.ceil(Duration.toMillis(delay.value)))
  })

/**
 * The submit activities of a runner: one for its `resumeDelays` (a delay
 * that is not a duration from 0 to 1 day throws a `RangeError`, so the
 * layers that take them, `QuoteWorkflow.layer`, `DurableQuotes.layerRunner`
 * and `Embedded.layerQuotes`, throw it when called).
 */
export const submits = (options: Pick<Options, "resumeDelays"> = {}) => {
  const resume = resumePosts(resumeDelaysOf(options))
  /**
   * The submit activity of one quote (its workflow `executionId`): open the
   * card, POST with durable attempt counting, publish `Submitted`; run again
   * after a pause while the POST failed and its transaction may exist, or
   * the service was out (see `resumePosts`).
   */
  return (payload: Payload, executionId: string) =>
    resume(payload.requestId, Effect.provideService(submitActivity, CurrentPayload, { payload, executionId }))
}

/** The submit activity of one quote with `options`' `resumeDelays` (see `submits`). */
export const submit = (payload: Payload, executionId: string, options: Pick<Options, "resumeDelays"> = {}) =>
  submits(options)(payload, executionId)

/** The outcome activity, made once per runner: poll the transaction in `CurrentSubmission` until it is terminal. */
const makeOutcomeActivity = ({ resumeDelays: _, ...track }: Options) =>
  Activity.make({
    name: `${name}/outcome`,
    success: Quote.CompletedQuote,
    error: DurableQuoteFailure,
    execute: Effect.gen(function*() {
      const submission = yield* CurrentSubmission
      const poller = yield* QuotePoller.QuotePoller
      const now = yield* Clock.currentTimeMillis
      const terminal = yield* poller.track(submission.transactionId, {
        ...track,
        expectedCompletionTime: remainingHint(submission, now, track)
      }).pipe(Stream.filter(QuoteEvent.isTerminal), Stream.runHead)
      // No terminal event: the poller stopped (its runner is shutting down); the engine runs the activity again.
      if (Option.isNone(terminal)) return yield* Effect.interrupt
      return terminal.value._tag === "Completed"
        ? terminal.value.quote
        : yield* Effect.fail(terminal.value.error)
    })
  })

/**
 * The outcome activities of a runner: one for its polling options. Options
 * the poller would refuse (`QuotePoller.optionsProblem`) throw a `RangeError`
 * that names them, when the layer is called: never a quote ended by them.
 */
export const outcomes = (options: Options = {}) => {
  const problem = QuotePoller.optionsProblem(options)
  if (problem !== undefined) throw new RangeError(`the durable quotes' track options: ${problem}`)
  const activity = makeOutcomeActivity(options)
  /** The outcome activity of one quote: poll its transaction until it is terminal. */
  return (submission: Submission) => Effect.provideService(activity, CurrentSubmission, submission)
}
