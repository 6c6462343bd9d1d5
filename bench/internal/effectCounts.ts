/** Counts the Effect operations and fibers the runtime runs from now on (lab tool: patches the fiber's run loop). */
import * as Effect from "effect/Effect"

/** The live counts: operations run and distinct fibers seen since the call. */
export const countOperations = (): { operations: number; fibers: number } => {
  const counts = { operations: 0, fibers: 0 }
  const prototype = Object.getPrototypeOf(Effect.runFork(Effect.void)) as {
    runLoop: (this: any, effect: unknown) => unknown
  }
  const runLoop = prototype.runLoop
  const seen = new WeakSet<object>()
  prototype.runLoop = function(effect) {
    if (!seen.has(this)) {
      seen.add(this)
      counts.fibers++
    }
    try {
      return runLoop.call(this, effect)
    } finally {
      counts.operations += this.currentOpCount as number
    }
  }
  return counts
}
