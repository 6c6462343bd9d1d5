/** The token bucket of each API key, on `TestClock`. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type * as ApiKeys from "../src/ApiKeys.js"
import * as RateLimit from "../src/RateLimit.js"

const key = (id: string, ratePerSecond: number, burst: number): ApiKeys.ApiKey => ({
  id,
  name: id,
  ratePerSecond,
  burst,
  webhooks: []
})

/** How many of `count` requests the bucket lets through, and the `Retry-After` of the last refusal. */
const takeMany = (limit: RateLimit.Service, caller: ApiKeys.ApiKey, count: number) =>
  Effect.gen(function*() {
    let allowed = 0
    let retryAfter: number | undefined
    for (let i = 0; i < count; i++) {
      const result = yield* Effect.result(limit.take(caller))
      if (result._tag === "Success") allowed++
      else retryAfter = result.failure.retryAfterSeconds
    }
    return { allowed, retryAfter }
  })

describe("RateLimit", () => {
  it.effect("a full bucket lets `burst` requests through at once, then refuses with Retry-After ≥ 1 s", () =>
    Effect.gen(function*() {
      const limit = yield* RateLimit.make
      expect(yield* takeMany(limit, key("key_a", 20, 40), 45)).toEqual({ allowed: 40, retryAfter: 1 })
      const refused = yield* Effect.flip(limit.take(key("key_a", 20, 40)))
      expect(refused).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 1 })
      expect(refused.message).toBe("rate limit exceeded: retry after 1 s")
    }))

  it.effect("the bucket refills at the rate, never above the burst", () =>
    Effect.gen(function*() {
      const limit = yield* RateLimit.make
      const caller = key("key_b", 10, 5)
      expect((yield* takeMany(limit, caller, 5)).allowed).toBe(5)
      yield* TestClock.adjust("99 millis")
      expect((yield* takeMany(limit, caller, 1)).allowed).toBe(0)
      yield* TestClock.adjust("1 millis")
      // 100 ms at 10/s: one token back
      expect(yield* takeMany(limit, caller, 2)).toEqual({ allowed: 1, retryAfter: 1 })
      yield* TestClock.adjust("1 hour")
      expect((yield* takeMany(limit, caller, 10)).allowed).toBe(5)
    }))

  it.effect("Retry-After is the whole seconds until a token is back: a slow rate waits longer", () =>
    Effect.gen(function*() {
      const limit = yield* RateLimit.make
      const caller = key("key_c", 0.2, 1)
      yield* limit.take(caller)
      expect((yield* Effect.flip(limit.take(caller))).retryAfterSeconds).toBe(5)
      yield* TestClock.adjust("2500 millis")
      // half a token back: 2.5 s to go, rounded up
      expect((yield* Effect.flip(limit.take(caller))).retryAfterSeconds).toBe(3)
      yield* TestClock.adjust("2500 millis")
      yield* limit.take(caller)
    }))

  it.effect("each key has its own bucket", () =>
    Effect.gen(function*() {
      const limit = yield* RateLimit.make
      expect((yield* takeMany(limit, key("key_d", 1, 2), 3)).allowed).toBe(2)
      expect((yield* takeMany(limit, key("key_e", 1, 2), 3)).allowed).toBe(2)
    }))
})
