/**
 * The durable quote: a workflow keyed by the quote's requestId, with two
 * activities whose results the engine persists.
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
 * `layer` registers the workflow with the `WorkflowEngine` in context: the
 * deployment (embedded or runners) provides the engine and the database.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Activity from "@effect/workflow/Activity"
import * as Workflow from "@effect/workflow/Workflow"
import { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import * as Quote from "@gcx/core/Quote"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as PollSchedule from "@gcx/poller/PollSchedule"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Crypto from "node:crypto"
import * as CardCipher from "./CardCipher.js"
import * as SubmitAttempts from "./SubmitAttempts.js"

/**
 * Every way a durable quote can fail: the core `QuoteFailure`, which holds a
 * card that could not be opened (`CardDecryptionError`) with the local errors.
 */
export const DurableQuoteFailure = Errors.QuoteFailure

/** Every way a durable quote can fail. */
export type DurableQuoteFailure = typeof DurableQuoteFailure.Type

/** What the engine persists of a quote: its requestId and its sealed card. */
export const Payload = Schema.Struct({
  requestId: Ids.RequestId,
  card: CardCipher.SealedCard
})

/** What the engine persists of a quote. */
export type Payload = typeof Payload.Type

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

/** The name of the workflow, and the prefix of its activities. */
export const name = "GcxQuote"

/** The durable quote, keyed by its requestId. */
export const QuoteWorkflow = Workflow.make({
  name,
  payload: Payload,
  success: Quote.CompletedQuote,
  error: DurableQuoteFailure,
  idempotencyKey: ({ requestId }) => requestId
})

/** How a runner polls its quotes. */
export interface Options extends Omit<QuotePoller.TrackOptions, "expectedCompletionTime"> {}

/** Database failures are retried this long before the activity dies: a short outage costs no quote. */
const databaseRetry = Schedule.exponential("100 millis").pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.upTo("2 minutes")
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
    }, true))

/**
 * The quote an activity runs for. The workflow body provides it around each
 * activity, and the engine runs the activity in the body's context: so each
 * activity is made once (its schemas, and the parsers compiled from them, are
 * reused by every quote) rather than once per quote.
 */
class CurrentPayload extends Context.Tag("@gcx/workflow/QuoteWorkflow/CurrentPayload")<CurrentPayload, Payload>() {}

/** The persisted submission the outcome activity polls for, provided like `CurrentPayload`. */
class CurrentSubmission
  extends Context.Tag("@gcx/workflow/QuoteWorkflow/CurrentSubmission")<CurrentSubmission, Submission>()
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
    const created = yield* client.createQuote(new Quote.QuoteRequest({ card }, true), {
      requestId: payload.requestId,
      previousAttempts,
      onRetry: () => Effect.asVoid(nextAttempt(attempts, payload.requestId))
    })
    yield* Effect.flatMap(submitted(payload, created), bus.publish)
    const completed = Quote.toCompleted(created.quote)
    if (Option.isSome(completed)) {
      yield* Effect.flatMap(
        DateTime.now,
        (timestamp) =>
          bus.publish(
            new QuoteEvent.Completed(
              { transactionId: created.transactionId, timestamp, quote: completed.value },
              true
            )
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
    }, true)
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

/** The terminal outcome of a quote, as the runner that ran it tells `QuoteOutcomes`. */
export interface Outcome {
  readonly requestId: string
  /** Absent when the quote failed before the service created a transaction. */
  readonly transactionId: string | undefined
  readonly exit: Exit.Exit<Quote.CompletedQuote, DurableQuoteFailure>
}

/**
 * Told of every quote's terminal outcome by the runner that ran it, with its
 * requestId and transactionId: where a deployment plugs in the delivery of
 * outcomes to other nodes (e.g. PostgreSQL `NOTIFY`). At least once: a runner
 * that dies after the outcome and before the engine records it tells it
 * again on replay. By default it is told nothing.
 */
export class QuoteOutcomes extends Context.Reference<QuoteOutcomes>()("@gcx/workflow/QuoteWorkflow/QuoteOutcomes", {
  defaultValue: (): { readonly publish: (outcome: Outcome) => Effect.Effect<void> } => ({ publish: () => Effect.void })
}) {}

/**
 * The body of the workflow: submit, then the outcome (unless the POST answered
 * it); the outcome told to `QuoteOutcomes`. Made once per runner (see `outcomes`).
 */
export const makeRun = (options: Options = {}) => {
  const outcome = outcomes(options)
  return (payload: Payload) => run(payload, outcome)
}

const run = (payload: Payload, outcome: ReturnType<typeof outcomes>) =>
  Effect.gen(function*() {
    const outcomes = yield* QuoteOutcomes
    let transactionId: string | undefined
    return yield* Effect.gen(function*() {
      const submission = yield* submit(payload)
      transactionId = submission.transactionId
      if (submission.completed !== undefined) return submission.completed
      return yield* outcome(submission)
    }).pipe(
      Effect.tapBoth({
        onSuccess: (quote) =>
          outcomes.publish({
            requestId: payload.requestId,
            transactionId: quote.transactionId,
            exit: Exit.succeed(quote)
          }),
        onFailure: (error) => outcomes.publish({ requestId: payload.requestId, transactionId, exit: Exit.fail(error) })
      })
    )
  })

/**
 * Registers the workflow with the engine in context. Every runner provides
 * it, over its deployment (`WorkflowEngine` and `SqlClient`), its exchange
 * client, poller and bus, and the card cipher.
 */
export const layer = (options: Options = {}): Layer.Layer<
  never,
  SqlError.SqlError,
  | WorkflowEngine
  | SqlClient.SqlClient
  | ExchangeClient.ExchangeClient
  | QuotePoller.QuotePoller
  | QuoteEvents.QuoteEvents
  | CardCipher.CardCipher
> =>
  QuoteWorkflow.toLayer(makeRun(options)).pipe(
    Layer.provide(SubmitAttempts.layer)
  )

/**
 * The execution id of the quote `requestId`, what the engine keys its rows by:
 * the same value as `QuoteWorkflow.executionId` (the first 16 bytes of the
 * SHA-256 of `GcxQuote-<requestId>`, in hex, as `@effect/workflow` derives it
 * from the idempotency key), computed synchronously with `node:crypto`.
 * `@effect/workflow` uses WebCrypto's `subtle.digest`, a job on libuv's
 * thread pool and a promise per quote (in a CPU profile of the embedded
 * runner, 0.7 ms of the main thread per quote on a loaded machine).
 */
export const executionIdSync = (requestId: string): string =>
  Crypto.createHash("sha256").update(`${name}-${requestId}`, "utf8").digest().subarray(0, 16).toString("hex")

/** The execution id of the quote `requestId` (see `executionIdSync`). */
export const executionId = (requestId: string): Effect.Effect<string> => Effect.sync(() => executionIdSync(requestId))

/** The engine's `execute` for a quote, keyed by `executionIdSync`, in the span `QuoteWorkflow.execute` opens. */
const onEngine = <const Discard extends boolean>(payload: Payload, discard: Discard) =>
  Effect.flatMap(WorkflowEngine, (engine) => {
    const executionId = executionIdSync(payload.requestId)
    return engine.execute(QuoteWorkflow, { executionId, payload, discard }).pipe(
      Effect.withSpan(`${name}.execute`, { captureStackTrace: false, attributes: { executionId } })
    )
  })

/**
 * Runs the quote on the engine in context and awaits its outcome: what
 * `QuoteWorkflow.execute` does, in the same span, without its WebCrypto
 * digest and without validating again a payload made of validated parts.
 */
export const execute = (payload: Payload): Effect.Effect<Quote.CompletedQuote, DurableQuoteFailure, WorkflowEngine> =>
  onEngine(payload, false)

/** Records the quote on the engine in context and returns its execution id, without awaiting it (`discard`). */
export const record = (payload: Payload): Effect.Effect<string, never, WorkflowEngine> =>
  // With `discard` the engine returns once the request is stored: it never fails with the workflow's error.
  Effect.orDie(onEngine(payload, true))
