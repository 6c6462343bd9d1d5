/** The guard on a quote id's Idempotency-Key conflicts (`internal/conflicts.ts`), on `TestClock`. */
import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { TestClock } from "effect/testing"
import * as Conflicts from "../src/internal/conflicts.js"

/** A submit that answers a 409 (`"conflict"`), or a 202 (`"accepted"`), after yielding to the others. */
const submit = (conflict: boolean) =>
  Effect.andThen(Effect.yieldNow, conflict ? Effect.fail("conflict" as const) : Effect.succeed("accepted" as const))

const isConflict = (error: string) => error === "conflict"

describe("Conflicts", () => {
  it.effect("an id's conflicts are counted one POST at a time: past its budget, its POSTs are refused, others' not", () =>
    Effect.gen(function*() {
      const guard = yield* Conflicts.make
      const post = (id: string, conflict: boolean) =>
        Effect.result(guard.guarded(id, "key_a", submit(conflict), isConflict))
      // twice the budget, all at once: each counted before the next is answered
      const burst = yield* Effect.forEach(
        Array.from({ length: 2 * Conflicts.budget.burst }, () => post("q1", true)),
        (effect) => effect,
        { concurrency: "unbounded" }
      )
      const failures = burst.map((result) => Result.isFailure(result) ? result.failure : undefined)
      expect(failures.filter((failure) => failure === "conflict")).toHaveLength(Conflicts.budget.burst)
      const refused = failures.filter((failure) => typeof failure === "object")
      expect(refused).toHaveLength(Conflicts.budget.burst)
      // refused whatever it sends: the right card too
      const right = yield* post("q1", false)
      assert(Result.isFailure(right) && typeof right.failure === "object")
      expect(right.failure.retryAfterSeconds).toBe(Conflicts.budget.refillEverySeconds)
      // another id, and answers that are not 409s, spend nothing
      for (let i = 0; i < 2 * Conflicts.budget.burst; i++) {
        expect(yield* post("q2", false)).toEqual(Result.succeed("accepted"))
      }
      // one conflict is given back after its time: one more POST, then refused again
      yield* TestClock.adjust(`${Conflicts.budget.refillEverySeconds - 1} seconds`)
      expect(Result.isFailure(yield* post("q1", false))).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(yield* post("q1", true)).toEqual(Result.fail("conflict"))
      expect(Result.isFailure(yield* post("q1", false))).toBe(true)
    }))
})
