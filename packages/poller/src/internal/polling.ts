/**
 * One transaction's polling: its GET once it is due, what follows from the
 * answer (its events, the next due time from its schedule, or the end of the
 * quote), and its `PollTimeout` at the deadline. The engine
 * (`scheduler.ts`) decides when these run; they run on the engine's clock.
 *
 * Events are built from typed values, without re-validation
 * (`disableChecks`), as in `tracking.ts`.
 */
import { Errors, QuoteEvent } from "@gcx/core"
import type { ExchangeClient, RetryPolicy } from "@gcx/http"
import type * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Metrics from "../Metrics.js"
import * as Failures from "./failures.js"
import * as Tracking from "./tracking.js"
import type { Entry } from "./watch.js"

/** What polling needs from the poller. */
export interface Dependencies {
  readonly client: ExchangeClient.Service
  /** Publishes an event on the bus; runs before the sink sees it. */
  readonly publish: (event: QuoteEvent.QuoteEvent) => Effect.Effect<void>
  /** Runs after a transaction's terminal event: the journal forgets it unless its outcome is still unknown. */
  readonly finished: (transactionId: string, terminal: QuoteEvent.Terminal) => Effect.Effect<void>
}

/** The polling of transactions. */
export interface Polling {
  /** Asks the transaction's schedule for its first delay and queues its first GET. */
  readonly start: (entry: Entry) => Effect.Effect<void>
  /** One GET of a transaction that is due, and what follows from its answer. */
  readonly poll: (entry: Entry) => Effect.Effect<void>
  /** Ends the quote with `PollTimeout`: its deadline has passed. */
  readonly timeout: (entry: Entry) => Effect.Effect<void>
}

const disableChecks = { disableChecks: true } as const

/**
 * Polling on `clock`; `enqueue` queues a transaction whose `due` time is set
 * for its next GET.
 */
export const make = (
  dependencies: Dependencies,
  clock: Clock.Clock,
  enqueue: (entry: Entry) => Effect.Effect<void>
): Polling => {
  const { client, publish } = dependencies
  const timestampNow = Effect.sync(() => DateTime.makeUnsafe(clock.currentTimeMillisUnsafe()))

  const emit = (entry: Entry, event: QuoteEvent.QuoteEvent) =>
    Effect.andThen(publish(event), entry.watch.sink.emit(entry.index, event))

  // Uninterruptible: a caller that stops at the terminal event does not cut the journal's update short.
  const finish = (entry: Entry, terminal: QuoteEvent.Terminal) =>
    emit(entry, terminal).pipe(
      Effect.andThen(dependencies.finished(entry.transactionId, terminal)),
      Effect.andThen(entry.watch.sink.end(entry.index, Exit.succeed(terminal))),
      Effect.uninterruptible
    )

  const timeout = (entry: Entry) =>
    Effect.flatMap(timestampNow, (timestamp) =>
      finish(
        entry,
        new QuoteEvent.Failed({
          transactionId: entry.transactionId,
          timestamp,
          error: new Errors.PollTimeout({
            transactionId: entry.transactionId,
            deadlineMillis: entry.watch.deadlineMillis,
            polls: entry.polls,
            ...Option.match(entry.tracking.percentComplete, {
              onNone: () => ({}),
              onSome: (lastPercentComplete) => ({ lastPercentComplete })
            })
          })
        }, disableChecks)
      ))

  /** Asks the schedule for the delay before the next GET, from what is known now. */
  const plan = (entry: Entry) =>
    entry.step(clock.currentTimeMillisUnsafe(), {
      transactionId: entry.transactionId,
      polls: entry.polls,
      percentComplete: entry.tracking.percentComplete,
      expectedCompletionTime: Option.fromNullishOr(entry.hint)
    })

  /** Queues the next GET after `delay`, cut short at the deadline; a schedule that is done, or a deadline passed, ends the quote. */
  const arm = (entry: Entry, delay: Option.Option<Duration.Duration>) =>
    Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      if (Option.isNone(delay) || now >= entry.deadline) return timeout(entry)
      entry.due = now + Math.min(Duration.toMillis(delay.value), entry.deadline - now)
      return enqueue(entry)
    })

  const retrying = (entry: Entry, attempt: number, delay: Duration.Duration, error: Errors.QuoteFailure) =>
    Effect.flatMap(
      timestampNow,
      (timestamp) =>
        emit(entry, QuoteEvent.retrying({ transactionId: entry.transactionId, timestamp, attempt, delay }, error))
    )

  const poll = Effect.fnUntraced(function*(entry: Entry) {
    const { transactionId } = entry
    // The deadline bounds the GET too, its retries included; with no time left there is no GET.
    const remaining = entry.deadline - clock.currentTimeMillisUnsafe()
    if (remaining <= 0) return yield* timeout(entry)
    entry.polls += 1
    yield* Metrics.recordPoll
    // Attempt numbers run on from the requests that failed before this GET: they never restart mid-outage.
    const failedBefore = entry.failedRequests
    const answer = yield* client.getTransaction(transactionId, {
      onRetry: (info: RetryPolicy.RetryInfo) => retrying(entry, failedBefore + info.attempt, info.delay, info.error)
    }).pipe(Effect.result, Effect.timeoutOption(Duration.millis(remaining)))
    if (Option.isNone(answer)) return yield* timeout(entry)
    const result = answer.value
    const timestamp = yield* timestampNow
    if (Result.isSuccess(result)) {
      entry.failedRequests = 0
      entry.unexpectedInARow = 0
      entry.unauthorizedInARow = 0
      const { status } = result.success
      const observed = Tracking.observe(entry.tracking, status, timestamp)
      entry.tracking = observed.tracking
      const terminal = observed.done ? observed.events.at(-1) as QuoteEvent.Terminal : undefined
      const progress = terminal === undefined ? observed.events : observed.events.slice(0, -1)
      yield* Effect.forEach(progress, (event) => emit(entry, event), { discard: true })
      if (terminal !== undefined) return yield* finish(entry, terminal)
      entry.hint = status.response.expectedCompletionTime
      return yield* arm(entry, yield* plan(entry))
    }
    const error = result.failure
    entry.unexpectedInARow = error._tag === "UnexpectedResponse" ? entry.unexpectedInARow + 1 : 0
    entry.unauthorizedInARow = error._tag === "Unauthorized" ? entry.unauthorizedInARow + 1 : 0
    const pollable = Failures.isPollable(error, {
      unauthorized: entry.unauthorizedInARow,
      unexpected: entry.unexpectedInARow
    })
    if (!pollable) {
      return yield* finish(entry, new QuoteEvent.Failed({ transactionId, timestamp, error }, disableChecks))
    }
    entry.failedRequests += Failures.attemptsOf(error)
    // The schedule's delay, but never less than the service's Retry-After; the deadline cuts both short.
    const retryAfter = Errors.retryAfterOf(error)
    const delay = Option.map(
      yield* plan(entry),
      (delay) => retryAfter !== undefined && retryAfter > Duration.toMillis(delay) ? Duration.millis(retryAfter) : delay
    )
    if (Option.isSome(delay)) {
      const left = Math.max(0, entry.deadline - clock.currentTimeMillisUnsafe())
      yield* retrying(entry, entry.failedRequests + 1, Duration.min(delay.value, Duration.millis(left)), error)
    }
    return yield* arm(entry, delay)
  })

  return {
    start: (entry) => Effect.flatMap(Effect.suspend(() => plan(entry)), (delay) => arm(entry, delay)),
    poll,
    timeout
  }
}
