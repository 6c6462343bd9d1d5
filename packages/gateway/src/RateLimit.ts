/**
 * Per-caller rate limits of the gateway: a token bucket per API key, in this
 * gateway's memory (each gateway behind a load balancer limits on its own).
 *
 * A key's bucket holds `burst` tokens and starts full; it refills at
 * `ratePerSecond` tokens a second, up to `burst`; each request takes one. An
 * empty bucket refuses with `RateLimited`, whose `retryAfterSeconds` (the
 * `Retry-After` header) is the whole seconds until a token is back, at least 1.
 * Time is the `Clock`'s, so tests run on `TestClock`. A bucket is kept per key
 * id that has made a request (a few numbers each); a key's new settings apply
 * at its next request.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { ApiKey } from "./ApiKeys.js"

/** The caller has spent its burst: retry after `retryAfterSeconds` (the `Retry-After` header). */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  retryAfterSeconds: Schema.Number
}) {
  override get message(): string {
    return `rate limit exceeded: retry after ${this.retryAfterSeconds} s`
  }
}

/** The rate limit service. */
export interface Service {
  /** Takes one request from the caller's bucket, or fails with `RateLimited`. */
  readonly take: (key: ApiKey) => Effect.Effect<void, RateLimited>
}

/** The rate limit service. */
export class RateLimit extends Context.Service<RateLimit, Service>()("@gcx/gateway/RateLimit") {}

/** A key's bucket: its tokens as of `at` (ms). */
interface Bucket {
  tokens: number
  at: number
}

/** The rate limits, with a bucket per key id in this process's memory. */
export const make: Effect.Effect<Service> = Effect.sync(() => {
  const buckets = new Map<string, Bucket>()

  const take = (key: ApiKey) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const rate = key.ratePerSecond
      const bucket = buckets.get(key.id)
      const tokens = bucket === undefined
        ? key.burst
        : Math.min(key.burst, bucket.tokens + (Math.max(0, now - bucket.at) * rate) / 1000)
      if (tokens >= 1) {
        if (bucket === undefined) buckets.set(key.id, { tokens: tokens - 1, at: now })
        else {
          bucket.tokens = tokens - 1
          bucket.at = now
        }
        return Effect.void
      }
      if (bucket !== undefined) {
        bucket.tokens = tokens
        bucket.at = now
      }
      return Effect.fail(new RateLimited({ retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / rate)) }))
    })

  return RateLimit.of({ take })
})

/** The rate limits as a layer. */
export const layer: Layer.Layer<RateLimit> = Layer.effect(RateLimit, make)
