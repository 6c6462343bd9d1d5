/**
 * A guard on `idempotency_key_reused` (409) per API key. A 409 says that the
 * card sent is not the one an Idempotency-Key was first used with, and a 202
 * that it is: whoever holds a key and knows an order's Idempotency-Key and card
 * number could test PINs against it, one POST each, without the service ever
 * seeing them. So a key has a budget of conflicts (`burst`, refilled at one a
 * `refillEvery`: the rate limits' token bucket, `RateLimit.make`); once it is
 * spent, every POST of that key is refused (429, `Retry-After`) until a
 * conflict is back, whatever its card: the refusal tells nothing of a match.
 * A well-behaved client never reuses a key for another card, so it never gets
 * there. Logged once each time a key's budget runs out. In this process's
 * memory, as the rate limits.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as RateLimit from "../RateLimit.js"

/** The conflicts a key may have at once, and how often one is given back: 10, one a minute. */
export const budget = { burst: 10, refillEverySeconds: 60 } as const

/** The guard: `admit` before a POST's submit, `conflicted` after its 409. */
export interface Guard {
  /** Fails with the seconds to wait when the key's budget is spent. */
  readonly admit: (keyId: string) => Effect.Effect<void, RateLimit.RateLimited>
  /** Counts a 409 of the key. */
  readonly conflicted: (keyId: string) => Effect.Effect<void>
}

/** A guard with its own budgets, in this process's memory. */
export const make: Effect.Effect<Guard> = Effect.gen(function*() {
  const budgets = yield* RateLimit.make
  /** The keys whose budget is spent, until the time (ms) a conflict is back. */
  const spent = new Map<string, number>()

  const admit: Guard["admit"] = (keyId) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const until = spent.get(keyId)
      if (until === undefined) return Effect.void
      if (until <= now) {
        spent.delete(keyId)
        return Effect.void
      }
      return Effect.fail(new RateLimit.RateLimited({ retryAfterSeconds: Math.ceil((until - now) / 1000) }))
    })

  const conflicted: Guard["conflicted"] = (keyId) =>
    budgets.take({
      id: keyId,
      name: keyId,
      ratePerSecond: 1 / budget.refillEverySeconds,
      burst: budget.burst,
      webhooks: []
    }).pipe(
      Effect.catchTag("RateLimited", (limited) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          spent.set(keyId, now + limited.retryAfterSeconds * 1000)
          return Effect.logWarning(
            `gateway: the API key ${keyId} had ${budget.burst} Idempotency-Key conflicts (409) within ` +
              `${budget.burst * budget.refillEverySeconds / 60} minutes: its POSTs are refused (429) for ` +
              `${limited.retryAfterSeconds} s. A client that reuses keys for other cards, or someone testing cards.`
          )
        }))
    )

  return { admit, conflicted }
})
