/**
 * The polling engine behind every `QuotePoller` stream and call. Each
 * transaction in flight is a small record in one due queue, ordered by the
 * time of its next GET; one fiber sleeps until the earliest is due and starts
 * its GET in a fiber of its own, which lives only as long as the GET. So a
 * waiting transaction costs a few hundred bytes, not a fiber and a stream.
 * GETs in flight are capped; what is due while the cap is reached waits in a
 * second queue, earliest deadline first, and a deadline that passes there
 * ends the quote without a GET.
 *
 * A watch is one caller's set of transactions (one for `track`, many for
 * `trackAll`), with the schedule, the deadline and the sink its events go
 * to. Closing a watch stops its polling at once: its GETs in flight are
 * interrupted and its records are dropped when they come due.
 *
 * Events are built from typed values, without re-validation (`true`), as in
 * `tracking.ts`.
 */
import { Errors, QuoteEvent } from "@gcx/core"
import type { ExchangeClient } from "@gcx/http"
import type { RetryPolicy } from "@gcx/http"
import * as Cause from "effect/Cause"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as FiberRefs from "effect/FiberRefs"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Metrics from "../Metrics.js"
import type * as PollSchedule from "../PollSchedule.js"
import { step } from "../PollSchedule.js"
import * as DueQueue from "./dueQueue.js"
import * as Tracking from "./tracking.js"

/** A transaction to poll. */
export interface Target {
  readonly transactionId: string
  /** The service's `expectedCompletionTime`, when already known (from the POST or the journal). */
  readonly expectedCompletionTime?: number | undefined
}

/** How a watch polls. */
export interface WatchOptions {
  readonly schedule: PollSchedule.PollSchedule
  readonly deadlineMillis: number
}

/**
 * Where a watch's events go, besides the bus. `index` is the position of the
 * transaction among the watch's targets.
 */
export interface Sink {
  /** Every event of a transaction, in order, its terminal event last. */
  readonly emit: (index: number, event: QuoteEvent.QuoteEvent) => Effect.Effect<void>
  /**
   * A transaction is over: its terminal event (already emitted), or the defect
   * that ended it; or (index -1, interrupted) the engine stopped while the
   * watch was open.
   */
  readonly end: (index: number, exit: Exit.Exit<QuoteEvent.Terminal>) => Effect.Effect<void>
}

/** What the engine needs from the poller. */
export interface Dependencies {
  readonly client: ExchangeClient.Service
  /** Publishes an event on the bus; runs before the sink sees it. */
  readonly publish: (event: QuoteEvent.QuoteEvent) => Effect.Effect<void>
  /** Runs after a transaction's terminal event: the journal forgets it unless its outcome is still unknown. */
  readonly finished: (transactionId: string, terminal: QuoteEvent.Terminal) => Effect.Effect<void>
  /** How many GETs may be in flight at once. */
  readonly maxConcurrentPolls: number
}

/** The engine. */
export interface Scheduler {
  /**
   * Starts polling `targets`; the returned effect closes the watch (stops its
   * polling, interrupting its GETs in flight). The GETs run with the caller's
   * FiberRefs (under its span, with its tracer, logger and log annotations)
   * and the engine's clock.
   */
  readonly watch: (
    targets: ReadonlyArray<Target>,
    options: WatchOptions,
    sink: Sink
  ) => Effect.Effect<Effect.Effect<void>>
}

interface Watch extends WatchOptions {
  readonly sink: Sink
  /** The caller's FiberRefs (its span, tracer, logger, annotations): each GET runs with them. */
  readonly fiberRefs: FiberRefs.FiberRefs
  readonly inFlight: Set<Fiber.RuntimeFiber<void>>
  open: boolean
}

/** One transaction in flight: everything the engine remembers of it between two GETs. */
interface Entry {
  readonly watch: Watch
  readonly index: number
  readonly transactionId: string
  readonly deadline: number
  due: number
  scheduleState: unknown
  polls: number
  /** Requests that failed since the last answer that could be used (the client's retries included). */
  failedRequests: number
  unexpectedInARow: number
  /** GETs in a row that ended in `Unauthorized`: the client's one 401 recovery failed each time. */
  unauthorizedInARow: number
  tracking: Tracking.Tracking
  /** The latest `expectedCompletionTime` the service gave. */
  hint: number | undefined
}

/**
 * Whether the journal keeps a transaction after this terminal event: only
 * while its outcome is unknown and can still be learnt by resuming, that is
 * after `PollTimeout` and after failures of this client's own configuration
 * or credentials (`Unauthorized`: revoked credentials).
 */
export const keepsJournalEntry = (event: QuoteEvent.Terminal): boolean =>
  event._tag === "Failed" &&
  ["PollTimeout", "TokenError", "InvalidApiKey", "PartnerNotFound", "MissingRequestId", "Unauthorized"].includes(
    event.error._tag
  )

/**
 * How many GETs in a row may end in `Unauthorized` (the client's one 401
 * recovery, a new token, refused too) before the quote ends with it:
 * credentials refused twice over are revoked, not expired.
 */
const maxUnauthorizedInARow = 2

/** The `Retry-After` an error carries, if any. */
const retryAfterOf = (error: Errors.QuoteFailure): number | undefined =>
  "retryAfterMillis" in error ? error.retryAfterMillis : undefined

/** The attempts a failed call made (1 when it does not say: a token failure, a scripted error). */
const attemptsOf = (error: Errors.QuoteFailure): number =>
  "attempts" in error && typeof error.attempts === "number" && error.attempts > 0 ? error.attempts : 1

/** A transient token failure: no answer, 429 or 5xx from the token endpoint. */
const isTransientTokenError = (error: Errors.QuoteFailure): boolean =>
  error._tag === "TokenError" && (error.httpStatus === undefined || error.httpStatus === 429 || error.httpStatus >= 500)

/** How many undecodable answers in a row end a quote, as a service that keeps answering garbage will not recover. */
const maxUnexpectedInARow = 3

/**
 * Builds the engine; its fiber and every GET in flight end with `scope`. All
 * its times (due times, deadlines, the GETs' own retries and timeouts, event
 * timestamps) are read from the `Clock` it is built with, whatever the
 * caller's.
 */
export const make = (dependencies: Dependencies): Effect.Effect<Scheduler, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { client, maxConcurrentPolls, publish } = dependencies
    const scope = yield* Effect.scope
    const clock = yield* Effect.clock
    // Records waiting for their time, by due time; then, once due, waiting for a GET slot, earliest deadline first.
    const waiting = DueQueue.make((entry: Entry) => entry.due)
    const ready = DueQueue.make((entry: Entry) => entry.deadline)
    // Opened to wake the engine: a record was queued, or a fiber of the engine ended.
    const wake = yield* Effect.makeLatch(false)
    let polling = 0
    const watches = new Set<Watch>()

    const timestampNow = Effect.map(clock.currentTimeMillis, (millis) => DateTime.unsafeMake(millis))

    /** Ends every open watch with `exit` (the engine stopped): their callers stop waiting. */
    const endAll = (exit: Exit.Exit<never>) =>
      Effect.forEach(watches, (watch) => {
        watch.open = false
        return watch.sink.end(-1, exit)
      }, { discard: true }).pipe(Effect.zipRight(Effect.sync(() => watches.clear())))
    yield* Effect.addFinalizer(() => Effect.flatMap(Effect.fiberId, (fiberId) => endAll(Exit.interrupt(fiberId))))

    const emit = (entry: Entry, event: QuoteEvent.QuoteEvent) =>
      Effect.zipRight(publish(event), entry.watch.sink.emit(entry.index, event))

    // Uninterruptible: a caller that stops at the terminal event does not cut the journal's update short.
    const finish = (entry: Entry, terminal: QuoteEvent.Terminal) =>
      emit(entry, terminal).pipe(
        Effect.zipRight(dependencies.finished(entry.transactionId, terminal)),
        Effect.zipRight(entry.watch.sink.end(entry.index, Exit.succeed(terminal))),
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
          }, true)
        ))

    /** Asks the schedule for the delay before the next GET, from what is known now. */
    const plan = (entry: Entry) =>
      Effect.gen(function*() {
        const now = yield* clock.currentTimeMillis
        const [state, delay] = yield* step(entry.watch.schedule, entry.scheduleState, now, {
          transactionId: entry.transactionId,
          polls: entry.polls,
          percentComplete: entry.tracking.percentComplete,
          expectedCompletionTime: Option.fromNullable(entry.hint)
        })
        entry.scheduleState = state
        return delay
      })

    /** Queues the next GET after `delay`, cut short at the deadline; a schedule that is done, or a deadline passed, ends the quote. */
    const arm = (entry: Entry, delay: Option.Option<Duration.Duration>) =>
      Effect.flatMap(clock.currentTimeMillis, (now) => {
        if (Option.isNone(delay) || now >= entry.deadline) return timeout(entry)
        entry.due = now + Math.min(Duration.toMillis(delay.value), entry.deadline - now)
        waiting.push(entry)
        return wake.open
      })

    const retrying = (entry: Entry, attempt: number, delay: Duration.Duration, error: Errors.QuoteFailure) =>
      Effect.flatMap(
        timestampNow,
        (timestamp) =>
          emit(entry, Tracking.retrying({ transactionId: entry.transactionId, timestamp, attempt, delay }, error))
      )

    /** One GET of a transaction that is due, and what follows from its answer. */
    const poll = (entry: Entry) =>
      Effect.gen(function*() {
        const { transactionId } = entry
        // The deadline bounds the GET too, its retries included; with no time left there is no GET.
        const remaining = entry.deadline - (yield* clock.currentTimeMillis)
        if (remaining <= 0) return yield* timeout(entry)
        entry.polls += 1
        yield* Metrics.recordPoll
        // Attempt numbers run on from the requests that failed before this GET: they never restart mid-outage.
        const failedBefore = entry.failedRequests
        const answer = yield* client.getTransaction(transactionId, {
          onRetry: (info: RetryPolicy.RetryInfo) => retrying(entry, failedBefore + info.attempt, info.delay, info.error)
        }).pipe(Effect.either, Effect.timeoutOption(remaining))
        if (Option.isNone(answer)) return yield* timeout(entry)
        const result = answer.value
        const timestamp = yield* timestampNow
        if (Either.isRight(result)) {
          entry.failedRequests = 0
          entry.unexpectedInARow = 0
          entry.unauthorizedInARow = 0
          const observed = Tracking.observe(entry.tracking, result.right.status, timestamp)
          entry.tracking = observed.tracking
          const terminal = observed.done ? observed.events.at(-1) as QuoteEvent.Terminal : undefined
          const progress = terminal === undefined ? observed.events : observed.events.slice(0, -1)
          yield* Effect.forEach(progress, (event) => emit(entry, event), { discard: true })
          if (terminal !== undefined) return yield* finish(entry, terminal)
          entry.hint = result.right.status.response.expectedCompletionTime
          return yield* arm(entry, yield* plan(entry))
        }
        const error = result.left
        entry.unexpectedInARow = error._tag === "UnexpectedResponse" ? entry.unexpectedInARow + 1 : 0
        entry.unauthorizedInARow = error._tag === "Unauthorized" ? entry.unauthorizedInARow + 1 : 0
        const pollable = (Errors.isRetryable(error) && entry.unauthorizedInARow < maxUnauthorizedInARow) ||
          isTransientTokenError(error) ||
          (error._tag === "UnexpectedResponse" && entry.unexpectedInARow < maxUnexpectedInARow)
        if (!pollable) return yield* finish(entry, new QuoteEvent.Failed({ transactionId, timestamp, error }, true))
        entry.failedRequests += attemptsOf(error)
        // The schedule's delay, but never less than the service's Retry-After; the deadline cuts both short.
        const retryAfter = retryAfterOf(error)
        const delay = Option.map(
          yield* plan(entry),
          (delay) =>
            retryAfter !== undefined && retryAfter > Duration.toMillis(delay) ? Duration.millis(retryAfter) : delay
        )
        if (Option.isSome(delay)) {
          const left = Math.max(0, entry.deadline - (yield* clock.currentTimeMillis))
          yield* retrying(entry, entry.failedRequests + 1, Duration.min(delay.value, Duration.millis(left)), error)
        }
        return yield* arm(entry, delay)
      })

    /**
     * Runs `work` for a record in a fiber of its own, with the caller's
     * FiberRefs and the engine's clock. The fiber joins its watch's fibers as
     * its first step, or does nothing if the watch has closed by then, so that
     * closing a watch always stops its work. A failure or defect ends the
     * transaction for its caller; interruption does too, unless the watch was
     * closed (then nobody is waiting). `onExit` runs however the fiber ends,
     * even interrupted before it started.
     */
    const launch = (entry: Entry, work: Effect.Effect<void>, onExit: () => void) =>
      Effect.withFiberRuntime<void>((fiber) => {
        const { watch } = entry
        if (!watch.open) return Effect.void
        watch.inFlight.add(fiber)
        return Effect.setFiberRefs(watch.fiberRefs).pipe(
          Effect.zipRight(Effect.withClock(work, clock)),
          Effect.catchAllCause((cause) =>
            !watch.open && Cause.isInterruptedOnly(cause)
              ? Effect.void
              : watch.sink.end(entry.index, Exit.failCause(cause))
          )
        )
      }).pipe(
        Effect.forkIn(scope),
        Effect.map((fiber) =>
          fiber.addObserver(() => {
            entry.watch.inFlight.delete(fiber)
            onExit()
          })
        )
      )

    const slotFreed = () => {
      polling -= 1
      wake.unsafeOpen()
    }
    const noop = () => {}

    /**
     * The engine's fiber: moves what is due to the ready queue, ends what
     * waited past its deadline (no slot needed), starts GETs within the
     * concurrency, then sleeps until the next due time or deadline, or until it
     * is woken.
     */
    const loop = Effect.gen(function*() {
      while (true) {
        yield* wake.close
        const now = yield* clock.currentTimeMillis
        for (let next = waiting.peek(); next !== undefined && next.due <= now; next = waiting.peek()) {
          waiting.pop()
          if (next.watch.open) ready.push(next)
        }
        for (let next = ready.peek(); next !== undefined && next.deadline <= now; next = ready.peek()) {
          ready.pop()
          if (next.watch.open) yield* launch(next, timeout(next), noop)
        }
        while (polling < maxConcurrentPolls) {
          const next = ready.pop()
          if (next === undefined) break
          if (!next.watch.open) continue
          polling += 1
          yield* launch(next, poll(next), slotFreed)
        }
        const wakeAt = Math.min(waiting.peek()?.due ?? Infinity, ready.peek()?.deadline ?? Infinity)
        yield* wakeAt === Infinity
          ? wake.await
          : Effect.raceFirst(wake.await, clock.sleep(Duration.millis(wakeAt - now)))
      }
    })
    // Should the engine ever stop on a defect, its callers hear of it instead of waiting forever.
    yield* loop.pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.void
          : Effect.logError("poller: the polling engine stopped", cause).pipe(
            Effect.zipRight(endAll(Exit.failCause(cause)))
          )
      ),
      Effect.forkIn(scope)
    )

    const watch: Scheduler["watch"] = (targets, options, sink) =>
      Effect.gen(function*() {
        const fiberRefs = yield* Effect.getFiberRefs
        const watch: Watch = { ...options, sink, fiberRefs, inFlight: new Set(), open: true }
        watches.add(watch)
        const deadline = (yield* clock.currentTimeMillis) + options.deadlineMillis
        yield* Effect.forEach(targets, (target, index) => {
          const entry: Entry = {
            watch,
            index,
            transactionId: target.transactionId,
            deadline,
            due: 0,
            scheduleState: options.schedule.initial,
            polls: 0,
            failedRequests: 0,
            unexpectedInARow: 0,
            unauthorizedInARow: 0,
            tracking: Tracking.initial(target.transactionId),
            hint: target.expectedCompletionTime
          }
          return Effect.flatMap(plan(entry), (delay) => arm(entry, delay))
        }, { discard: true })
        return Effect.suspend(() => {
          watch.open = false
          watches.delete(watch)
          return Fiber.interruptAll(Array.from(watch.inFlight))
        })
      })

    return { watch }
  })
