/**
 * The durable quote: a workflow run under the execution id recorded for the
 * quote's requestId (`RequestIds.register`: drawn at random, never derived
 * from the requestId), with two activities whose results the engine persists
 * (`submit`, then `outcome` unless the POST answered it; see
 * `internal/quote/activities.ts`).
 *
 * `layer` registers the workflow with the `WorkflowEngine` in context: the
 * deployment (embedded or runners) provides the engine and the database.
 */
import type * as Quote from "@gcx/core/Quote"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import type * as QuoteEvents from "@gcx/poller/QuoteEvents"
import type * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import { WorkflowEngine } from "effect/workflow/WorkflowEngine"
import type * as CardCipher from "./CardCipher.js"
import { outcomes, submits } from "./internal/quote/activities.js"
import { type DurableQuoteFailure, name, type Payload, QuoteWorkflow } from "./internal/quote/definition.js"
import type { Options } from "./internal/quote/submission.js"
import * as RequestIds from "./RequestIds.js"

export {
  /** The pauses before a POST whose transaction may exist, or that met an outage, is sent again, unless `Options.resumeDelays` says otherwise. */
  defaultResumeDelays,
  /** The outcome activities of a runner: one for its polling options. */
  outcomes,
  /** The submit activity of one quote: open the card, POST with durable attempt counting, publish `Submitted`. */
  submit,
  /** The submit activities of a runner: one for its `resumeDelays`. */
  submits
} from "./internal/quote/activities.js"
export {
  /**
   * Every way a durable quote can fail: the core `QuoteFailure`, which holds a
   * card that could not be opened (`CardDecryptionError`) with the local errors.
   */
  DurableQuoteFailure,
  /** The name of the workflow, and the prefix of its activities. */
  name,
  /** What the engine persists of a quote: its requestId and its sealed card. */
  Payload,
  /** The durable quote workflow; its execution id is drawn at random and recorded against the requestId (`RequestIds`). */
  QuoteWorkflow
} from "./internal/quote/definition.js"
export {
  /** How a runner runs its quotes: how it polls them, and when it sends again a POST whose transaction may exist or that met an outage. */
  type Options,
  /**
   * The service's hint less the time since the POST was answered, never below
   * zero: a quote resumed on another runner after a crash polls at once when
   * its hint has passed, instead of waiting a whole hint again.
   */
  remainingHint,
  /** The persisted result of the submit activity: the transaction, and the quote when the POST answered it completed. */
  Submission
} from "./internal/quote/submission.js"

/** The terminal outcome of a quote, as the runner that ran it tells `QuoteOutcomes`. */
export interface Outcome {
  readonly requestId: string
  /** The workflow that ran it: the execution id recorded for the requestId, unless the run was not submitted through `DurableQuotes`. */
  readonly executionId: string
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
export interface QuoteOutcomes {
  readonly publish: (outcome: Outcome) => Effect.Effect<void>
}

/** Told of every quote's terminal outcome (see the interface); a `Context.Reference`, told nothing by default. */
export const QuoteOutcomes = Context.Reference<QuoteOutcomes>(
  "@gcx/workflow/QuoteWorkflow/QuoteOutcomes",
  { defaultValue: () => ({ publish: () => Effect.void }) }
)

/**
 * Told of each quote's transaction once its submission is known, on every run
 * (the first, and each replay that reads the submission back), before the
 * transaction is polled: what lets a subscriber of the bus, whose events name
 * the transaction only, tell the quote they belong to after a restart, when no
 * `Submitted` is published again (`EventLog`'s writer).
 */
export interface QuoteTransactions {
  readonly submitted: (requestId: string, transactionId: string) => Effect.Effect<void>
}

/** Told of each quote's transaction (see the interface); a `Context.Reference`, told nothing by default. */
export const QuoteTransactions = Context.Reference<QuoteTransactions>(
  "@gcx/workflow/QuoteWorkflow/QuoteTransactions",
  { defaultValue: () => ({ submitted: () => Effect.void }) }
)

/**
 * The body of the workflow: submit, then the outcome (unless the POST answered
 * it); the transaction told to `QuoteTransactions`, the outcome to
 * `QuoteOutcomes`. Made once per runner (see `outcomes`).
 */
export const makeRun = (options: Options = {}) => {
  const outcome = outcomes(options)
  const submit = submits(options)
  return (payload: Payload, executionId: string) => run(payload, executionId, submit, outcome)
}

const run = Effect.fnUntraced(function*(
  payload: Payload,
  executionId: string,
  submit: ReturnType<typeof submits>,
  outcome: ReturnType<typeof outcomes>
) {
  const told = yield* QuoteOutcomes
  const transactions = yield* QuoteTransactions
  const { requestId } = payload
  let transactionId: string | undefined
  const started = yield* Clock.currentTimeMillis
  return yield* Effect.gen(function*() {
    const submission = yield* submit(payload, executionId)
    transactionId = submission.transactionId
    yield* transactions.submitted(requestId, transactionId)
    if (submission.submittedAt !== undefined && submission.submittedAt < started) {
      // the submission was recorded by an earlier run: this runner resumes the quote (failover or restart)
      yield* Effect.logInfo("resuming a durable quote submitted by an earlier run").pipe(
        Effect.annotateLogs({ requestId: payload.requestId, transactionId })
      )
    }
    if (submission.completed !== undefined) return submission.completed
    return yield* outcome(submission)
  }).pipe(
    Effect.tap((quote) =>
      told.publish({ requestId, executionId, transactionId: quote.transactionId, exit: Exit.succeed(quote) })
    ),
    Effect.tapError((error) => told.publish({ requestId, executionId, transactionId, exit: Exit.fail(error) }))
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
    Layer.provide(RequestIds.layer)
  )

/** The engine's `execute` for a quote under `executionId`, in the span `QuoteWorkflow.execute` opens. */
const onEngine = <const Discard extends boolean>(payload: Payload, executionId: string, discard: Discard) =>
  WorkflowEngine.use((engine) =>
    engine.execute(QuoteWorkflow, { executionId, payload, discard }).pipe(
      Effect.withSpan(`${name}.execute`, { attributes: { executionId } }, { captureStackTrace: false })
    )
  )

/**
 * Runs the quote on the engine in context under `executionId` (the one
 * `RequestIds.register` recorded for its requestId) and awaits its outcome,
 * in the span `QuoteWorkflow.execute` opens, without validating again a
 * payload made of validated parts.
 */
export const execute = (
  payload: Payload,
  executionId: string
): Effect.Effect<Quote.CompletedQuote, DurableQuoteFailure, WorkflowEngine> => onEngine(payload, executionId, false)

/** Records the quote on the engine in context under `executionId`, without awaiting it (`discard`). */
export const record = (payload: Payload, executionId: string): Effect.Effect<string, never, WorkflowEngine> =>
  // With `discard` the engine returns once the request is stored: it never fails with the workflow's error.
  Effect.orDie(onEngine(payload, executionId, true))
