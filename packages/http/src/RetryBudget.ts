/**
 * A client-wide retry budget: a token bucket that every automatic retry draws
 * from, so that an outage makes calls fail fast instead of becoming a retry
 * storm (ARCHITECTURE.md, "Retries"). First attempts never draw from it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"

/** The size of the bucket and how fast it fills up again. */
export interface Settings {
  /** The most retries the bucket holds; 0 disables automatic retries. */
  readonly capacity: number
  /** Retries added back per second, up to `capacity`. */
  readonly refillPerSecond: number
}

/** The default budget: bursts of up to 20 retries, refilled at 1 retry per second. */
export const defaults: Settings = { capacity: 20, refillPerSecond: 1 }

/** A token bucket of retries. Time is read through `Clock`. */
export interface RetryBudget {
  /** Takes one retry from the bucket; `false` when it is empty (the caller must not retry). */
  readonly take: Effect.Effect<boolean>
  /** The whole retries left in the bucket now. */
  readonly available: Effect.Effect<number>
}

interface Bucket {
  readonly tokens: number
  readonly updatedAt: number
}

/** A full bucket with the given settings. */
export const make = (settings: Settings): Effect.Effect<RetryBudget> =>
  Effect.gen(function*() {
    const capacity = Math.max(0, settings.capacity)
    const rate = Math.max(0, settings.refillPerSecond)
    const bucket = yield* Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => Ref.make<Bucket>({ tokens: capacity, updatedAt: now }))
    )
    const refill = (state: Bucket, now: number): Bucket => ({
      tokens: Math.min(capacity, state.tokens + (Math.max(0, now - state.updatedAt) / 1000) * rate),
      updatedAt: now
    })
    const take = Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) =>
        Ref.modify(bucket, (state): [boolean, Bucket] => {
          const filled = refill(state, now)
          return filled.tokens >= 1 ? [true, { ...filled, tokens: filled.tokens - 1 }] : [false, filled]
        })
      )
    )
    const available = Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) =>
        Ref.modify(bucket, (state): [number, Bucket] => {
          const filled = refill(state, now)
          return [Math.floor(filled.tokens), filled]
        })
      )
    )
    return { take, available }
  })
