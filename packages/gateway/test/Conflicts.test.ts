/** The guard on a key's Idempotency-Key conflicts (`internal/conflicts.ts`), on `TestClock`. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import * as Conflicts from "../src/internal/conflicts.js"

describe("Conflicts", () => {
  it.effect("a key is admitted until its budget of conflicts is spent, then refused until one is back", () =>
    Effect.gen(function*() {
      const guard = yield* Conflicts.make
      for (let i = 0; i < Conflicts.budget.burst; i++) yield* guard.conflicted("key_a")
      // the budget is spent, not yet exceeded: still admitted
      expect(yield* Effect.exit(guard.admit("key_a"))).toStrictEqual(Exit.void)
      yield* guard.conflicted("key_a")
      const refused = yield* Effect.flip(guard.admit("key_a"))
      expect(refused.retryAfterSeconds).toBeGreaterThan(0)
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(Conflicts.budget.refillEverySeconds)
      // another key is not affected
      expect(yield* Effect.exit(guard.admit("key_b"))).toStrictEqual(Exit.void)
      yield* TestClock.adjust(`${refused.retryAfterSeconds - 1} seconds`)
      expect(Exit.isFailure(yield* Effect.exit(guard.admit("key_a")))).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(yield* Effect.exit(guard.admit("key_a"))).toStrictEqual(Exit.void)
      // one conflict came back: one more is allowed, the next refuses again
      yield* guard.conflicted("key_a")
      expect(yield* Effect.exit(guard.admit("key_a"))).toStrictEqual(Exit.void)
      yield* guard.conflicted("key_a")
      expect(Exit.isFailure(yield* Effect.exit(guard.admit("key_a")))).toBe(true)
    }))
})
