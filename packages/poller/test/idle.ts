/**
 * Waiting, without time, until the fibers of a program all wait: the v3
 * `TestClock.adjust` did that before moving the clock. Effect 4.1's waits one
 * scheduler turn for fibers that no sleep woke (then, for each sleep it wakes,
 * until the woken fiber and what it started are idle), so a program forked at
 * the current instant that needs a few turns to reach its first sleep (a
 * layer to build, fibers to fork, a first GET at 0 ms) would see the clock
 * already moved.
 *
 * `Idle.make` gives a scheduler over the test's (the TestClock's) that counts
 * the tasks its fibers have scheduled and not yet run; `track(effect)` runs
 * `effect` with it (every fiber `effect` forks inherits it), and `settled`
 * yields until none is left: every tracked fiber is waiting (on a sleep, a
 * latch, a queue, a fiber). Tracked fibers must not wait on anything outside
 * the Effect scheduler (a timer, I/O), which the count cannot see.
 */
import { Effect, Scheduler } from "effect"

/** A tracked region and the wait for it to be idle. */
export interface Idle {
  /** Runs `effect` (and every fiber it forks) on the counting scheduler. */
  readonly track: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Yields until no tracked fiber has work scheduled; dies if that never happens within `maxTurns` turns. */
  readonly settled: Effect.Effect<void>
}

/** More turns than any test program needs to reach its sleeps: one that never settles is busy. */
const maxTurns = 10_000

export const make: Effect.Effect<Idle> = Effect.map(Scheduler.Scheduler, (parent) => {
  let pending = 0
  const scheduler: Scheduler.Scheduler = {
    executionMode: parent.executionMode,
    shouldYield: (fiber) => parent.shouldYield(fiber),
    makeDispatcher() {
      const dispatcher = parent.makeDispatcher()
      return {
        scheduleTask(task, priority) {
          pending++
          dispatcher.scheduleTask(() => {
            try {
              task()
            } finally {
              pending--
            }
          }, priority)
        },
        flush: () => dispatcher.flush()
      }
    }
  }
  const settled = Effect.gen(function*() {
    for (let turn = 0; turn < maxTurns; turn++) {
      // the test fiber is not tracked: its own turn is not counted
      yield* Effect.yieldNow
      if (pending === 0) return
    }
    return yield* Effect.die(new Error(`the tracked fibers still had work after ${maxTurns} scheduler turns`))
  })
  return {
    track: (effect) => Effect.provideService(effect, Scheduler.Scheduler, scheduler),
    settled
  }
})
