/**
 * Where a watch's events go: a stream of every event of its transactions, or
 * a single transaction's terminal event alone.
 */
import type { QuoteEvent } from "@gcx/core"
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Scheduler, Target, WatchOptions } from "./scheduler.js"

/**
 * Starts polling `targets` now, and returns their events as a stream that
 * ends after the last terminal event; closing the scope stops the polling.
 */
export const watchStream = (
  scheduler: Scheduler,
  targets: ReadonlyArray<Target>,
  options: WatchOptions
): Effect.Effect<Stream.Stream<QuoteEvent.QuoteEvent>, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (targets.length === 0) return Stream.empty
    const queue = yield* Queue.unbounded<QuoteEvent.QuoteEvent, Cause.Done>()
    let running = targets.length
    yield* Effect.acquireRelease(
      scheduler.watch(targets, options, {
        emit: (_, event) => Effect.asVoid(Queue.offer(queue, event)),
        end: (_, exit) =>
          Exit.isFailure(exit)
            ? Effect.asVoid(Queue.failCause(queue, exit.cause))
            : (running -= 1) === 0
            ? Effect.asVoid(Queue.end(queue))
            : Effect.void
      }),
      (close) => close
    )
    return Stream.fromQueue(queue)
  })

/** Polls one transaction to its end, with no stream: the events go to the bus, and the terminal one is returned. */
export const awaitTerminal = (
  scheduler: Scheduler,
  target: Target,
  options: WatchOptions
): Effect.Effect<QuoteEvent.Terminal> =>
  Effect.scoped(Effect.gen(function*() {
    const terminal = yield* Deferred.make<QuoteEvent.Terminal>()
    yield* Effect.acquireRelease(
      scheduler.watch([target], options, {
        emit: () => Effect.void,
        end: (_, exit) => Effect.asVoid(Deferred.done(terminal, exit))
      }),
      (close) => close
    )
    return yield* Deferred.await(terminal)
  }))
