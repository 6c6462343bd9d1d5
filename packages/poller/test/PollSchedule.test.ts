import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Option, Schedule } from "effect"
import { TestClock } from "effect/testing"
import { PollSchedule } from "../src/index.js"

const observation = (expectedCompletionTime?: number): PollSchedule.Observation => ({
  transactionId: "1JXX657P9VCKN74WVFNBH75GWR",
  polls: 0,
  percentComplete: Option.none(),
  expectedCompletionTime: Option.fromNullishOr(expectedCompletionTime)
})

/** Drives a schedule with the given observation for `count` recurrences; returns each one's time since the start. */
const pollTimes = (schedule: PollSchedule.PollSchedule, input: PollSchedule.Observation, count: number) =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStepWithSleep(schedule)
    const start = yield* Clock.currentTimeMillis
    const fiber = yield* Effect.gen(function*() {
      const times: Array<number> = []
      for (let i = 0; i < count; i++) {
        yield* step(input)
        times.push((yield* Clock.currentTimeMillis) - start)
      }
      return times
    }).pipe(Effect.forkChild)
    yield* TestClock.adjust(Duration.minutes(10))
    return yield* Fiber.join(fiber)
  })

describe("PollSchedule", () => {
  it.effect("waits for the hint in seconds, then backs off exponentially up to the cap", () =>
    Effect.gen(function*() {
      const times = yield* pollTimes(PollSchedule.make({ jitter: 0 }), observation(2), 9)
      // hint 2 s, then 250, 500, 1000, 2000, 4000, 5000 (cap), 5000, 5000 ms
      expect(times).toEqual([2000, 2250, 2750, 3750, 5750, 9750, 14750, 19750, 24750])
    }))

  it.effect("reads the hint in milliseconds when told so", () =>
    Effect.gen(function*() {
      const times = yield* pollTimes(PollSchedule.make({ jitter: 0, hintUnit: "milliseconds" }), observation(1500), 2)
      expect(times).toEqual([1500, 1750])
    }))

  it.effect("clamps a wild hint and polls at once without one", () =>
    Effect.gen(function*() {
      const clamped = yield* pollTimes(PollSchedule.make({ jitter: 0, maxHint: "10 seconds" }), observation(3600), 1)
      expect(clamped).toEqual([10_000])
      const noHint = yield* pollTimes(PollSchedule.make({ jitter: 0 }), observation(), 2)
      expect(noHint).toEqual([0, 250])
      const negative = yield* pollTimes(PollSchedule.make({ jitter: 0, minHint: "100 millis" }), observation(-5), 1)
      expect(negative).toEqual([100])
    }))

  it.effect("jitter only shortens backoff delays and never exceeds the cap", () =>
    Effect.gen(function*() {
      const times = yield* pollTimes(PollSchedule.make({ jitter: 0.5 }), observation(1), 10)
      const delays = times.slice(1).map((t, i) => t - times[i]!)
      const nominal = [250, 500, 1000, 2000, 4000, 5000, 5000, 5000, 5000]
      expect(times[0]).toBe(1000)
      delays.forEach((delay, i) => {
        expect(delay).toBeLessThanOrEqual(nominal[i]!)
        expect(delay).toBeGreaterThanOrEqual(nominal[i]! * 0.5 - 1)
      })
    }))

  it.effect("fixed polls at its interval whatever the hint", () =>
    Effect.gen(function*() {
      const times = yield* pollTimes(PollSchedule.fixed("1 second"), observation(4), 3)
      expect(times).toEqual([1000, 2000, 3000])
    }))

  it("hintDelay converts and clamps", () => {
    expect(Duration.toMillis(PollSchedule.hintDelay(observation(1.25)))).toBe(1250)
    expect(Duration.toMillis(PollSchedule.hintDelay(observation(Number.NaN)))).toBe(0)
    expect(Duration.toMillis(PollSchedule.hintDelay(observation(100)))).toBe(30_000)
  })
})
