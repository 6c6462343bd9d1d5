/**
 * The polling engine behind every `QuotePoller` stream and call. Each
 * transaction in flight is a small record (`watch.ts`) in one due queue,
 * ordered by the time of its next GET; one fiber sleeps until the earliest is
 * due and starts its GET (`polling.ts`) in a fiber of its own, which lives
 * only as long as the GET. So a waiting transaction costs a few hundred
 * bytes, not a fiber and a stream. GETs in flight are capped; what is due
 * while the cap is reached waits in a second queue, earliest deadline first,
 * and a deadline that passes there ends the quote without a GET.
 *
 * A watch is one caller's set of transactions (one for `track`, many for
 * `trackAll`), with the schedule, the deadline and the sink its events go
 * to. Closing a watch stops its polling at once: its GETs in flight are
 * interrupted and its records are dropped when they come due.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import * as Scope from "effect/Scope"
import * as PollSchedule from "../PollSchedule.js"
import * as DueQueue from "./dueQueue.js"
import * as Polling from "./polling.js"
import type { Entry, Sink, Target, Watch, WatchOptions } from "./watch.js"
import { makeEntry } from "./watch.js"

export { isOutcomeUnknown, keepsJournalEntry } from "./failures.js"
export type { Sink, Target, WatchOptions } from "./watch.js"

/** What the engine needs from the poller. */
export interface Dependencies extends Polling.Dependencies {
  /** How many GETs may be in flight at once. */
  readonly maxConcurrentPolls: number
}

/** The engine. */
export interface Scheduler {
  /**
   * Starts polling `targets`; the returned effect closes the watch (stops its
   * polling, interrupting its GETs in flight). The GETs run with the caller's
   * context (under its span, with its tracer, logger, log annotations and
   * metric attributes) and the engine's clock.
   */
  readonly watch: (
    targets: ReadonlyArray<Target>,
    options: WatchOptions,
    sink: Sink
  ) => Effect.Effect<Effect.Effect<void>>
}

/** The caller's context as a GET runs with it: without the caller's scope, with the engine's clock. */
const contextForGets = (caller: Context.Context<never>, clock: Clock.Clock): Context.Context<never> =>
  Context.add(Context.omit(Scope.Scope)(caller), Clock.Clock, clock)

/**
 * Builds the engine; its fiber and every GET in flight end with `scope`. All
 * its times (due times, deadlines, the GETs' own retries and timeouts, event
 * timestamps) are read from the `Clock` it is built with, whatever the
 * caller's.
 */
export const make = Effect.fnUntraced(function*(dependencies: Dependencies) {
  const { maxConcurrentPolls } = dependencies
  const scope = yield* Effect.scope
  const clock = yield* Clock.Clock
  // Records waiting for their time, by due time; then, once due, waiting for a GET slot, earliest deadline first.
  const waiting = DueQueue.make((entry: Entry) => entry.due)
  const ready = DueQueue.make((entry: Entry) => entry.deadline)
  // Opened to wake the engine: a record was queued, or a fiber of the engine ended.
  const wake = yield* Latch.make(false)
  let polling = 0
  const watches = new Set<Watch>()

  const { poll, start, timeout } = Polling.make(dependencies, clock, (entry) =>
    Effect.suspend(() => {
      waiting.push(entry)
      return wake.open
    }))

  /** Ends every open watch with `exit` (the engine stopped): their callers stop waiting. */
  const endAll = (exit: Exit.Exit<never>) =>
    Effect.forEach(watches, (watch) => {
      watch.open = false
      return watch.sink.end(-1, exit)
    }, { discard: true }).pipe(Effect.andThen(Effect.sync(() => watches.clear())))
  yield* Effect.addFinalizer(() => Effect.flatMap(Effect.fiberId, (fiberId) => endAll(Exit.interrupt(fiberId))))

  /**
   * Runs `work` for a record in a fiber of its own, with the caller's
   * context and the engine's clock. The fiber joins its watch's fibers as its
   * first step, or does nothing if the watch has closed by then, so that
   * closing a watch always stops its work. A failure or defect ends the
   * transaction for its caller; interruption does too, unless the watch was
   * closed (then nobody is waiting). `onExit` runs however the fiber ends,
   * even interrupted before it started.
   */
  const launch = (entry: Entry, work: Effect.Effect<void>, onExit: () => void) =>
    Effect.withFiber<void>((fiber) => {
      const { watch } = entry
      if (!watch.open) return Effect.void
      watch.inFlight.add(fiber)
      return work.pipe(
        Effect.updateContext((_: Context.Context<never>) => watch.context),
        Effect.catchCause((cause) =>
          !watch.open && Cause.hasInterruptsOnly(cause)
            ? Effect.void
            : watch.sink.end(entry.index, Exit.failCause(cause))
        )
      )
    }).pipe(
      Effect.forkIn(scope),
      Effect.map((fiber) => {
        fiber.addObserver(() => {
          entry.watch.inFlight.delete(fiber)
          onExit()
        })
      })
    )

  const slotFreed = () => {
    polling -= 1
    wake.openUnsafe()
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
      const now = clock.currentTimeMillisUnsafe()
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
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.void
        : Effect.logError("poller: the polling engine stopped", cause).pipe(
          Effect.andThen(endAll(Exit.failCause(cause)))
        )
    ),
    Effect.forkIn(scope)
  )

  const watch: Scheduler["watch"] = Effect.fnUntraced(function*(targets, options, sink) {
    const context = contextForGets(yield* Effect.context<never>(), clock)
    const watch: Watch = { ...options, sink, context, inFlight: new Set(), open: true }
    watches.add(watch)
    const deadline = clock.currentTimeMillisUnsafe() + options.deadlineMillis
    yield* Effect.forEach(targets, (target, index) =>
      Effect.flatMap(
        PollSchedule.toStep(options.schedule),
        (step) => start(makeEntry(watch, index, target, deadline, step))
      ), { discard: true })
    return Effect.suspend(() => {
      watch.open = false
      watches.delete(watch)
      return Fiber.interruptAll(Array.from(watch.inFlight))
    })
  })

  return { watch } satisfies Scheduler as Scheduler
})
