import { describe, expect, it } from "@effect/vitest"
import { QuoteEvent } from "@gcx/core"
import { DateTime, Effect, Fiber, Stream } from "effect"
import { QuoteEvents } from "../src/index.js"

const progress = (n: number) =>
  new QuoteEvent.Progress({
    transactionId: `T${n}`,
    timestamp: DateTime.makeUnsafe(0),
    percentComplete: n % 101,
    steps: []
  })

describe("QuoteEvents", () => {
  it.effect("delivers every event to every subscriber", () =>
    Effect.gen(function*() {
      const bus = yield* QuoteEvents.make()
      const first = yield* bus.subscribe
      const second = yield* bus.subscribe
      const collect = (stream: Stream.Stream<QuoteEvent.QuoteEvent>) =>
        stream.pipe(Stream.take(3), Stream.runCollect, Effect.forkChild)
      const fibers = [yield* collect(first), yield* collect(second)]
      yield* Effect.forEach([1, 2, 3], (n) => bus.publish(progress(n)))
      for (const fiber of fibers) {
        const events = yield* Fiber.join(fiber)
        expect(events.map((event) => event.transactionId)).toEqual(["T1", "T2", "T3"])
      }
    }))

  it.effect("a subscriber that never reads does not slow publishing and keeps only the newest events", () =>
    Effect.gen(function*() {
      const bus = yield* QuoteEvents.make({ capacity: 16 })
      const stalled = yield* bus.subscribe
      const live = yield* bus.subscribe
      const liveFiber = yield* live.pipe(Stream.take(10_000), Stream.runCount, Effect.forkChild)
      // 10,000 publishes complete although one subscriber reads nothing; yielding lets the live one keep up.
      yield* Effect.forEach(
        Array.from({ length: 10_000 }, (_, i) => i),
        (n) => bus.publish(progress(n)).pipe(Effect.andThen(Effect.yieldNow)),
        { discard: true }
      )
      expect(yield* Fiber.join(liveFiber)).toBe(10_000)
      const kept = yield* stalled.pipe(Stream.take(16), Stream.runCollect)
      expect(kept.map((event) => event.transactionId)).toEqual(
        Array.from({ length: 16 }, (_, i) => `T${10_000 - 16 + i}`)
      )
    }))
})
