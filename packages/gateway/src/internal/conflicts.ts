/**
 * A guard on `idempotency_key_reused` (409), per quote id (an API key's
 * Idempotency-Key). A 409 says that the card sent is not the one the key was
 * first used with, and a 202 that it is: whoever holds an API key and knows an
 * order's Idempotency-Key and card number could test PINs against it, one
 * POST each, without the service ever seeing them. So:
 * - the POSTs of one quote id run one at a time in this process, so that each
 *   conflict is counted before the next POST of that id is answered (POSTs of
 *   other ids are not held);
 * - a quote id has a budget of `budget.burst` conflicts, one given back every
 *   `budget.refillEverySeconds`; while it is spent, every POST of that id is
 *   refused (429, `Retry-After`), whatever its card: the refusal tells nothing
 *   of a match. Logged once each time an id's budget runs out.
 * A well-behaved client never reuses a key for another card, so it never meets
 * it. In this process's memory, as the rate limits: each gateway counts its
 * own, and a restart forgets them.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import * as RateLimit from "../RateLimit.js"

/** The conflicts a quote id may have, and how often one is given back: 5, one every 10 minutes. */
export const budget = { burst: 5, refillEverySeconds: 600 } as const

/** The quote ids whose conflicts are remembered at most: past that, the oldest is forgotten. */
const capacity = 10_000

/** The guard. */
export interface Guard {
  /**
   * Runs `submit`, the POST of quote `id` (of the API key `keyId`), after the
   * POSTs of `id` before it, when its budget is not spent (else `RateLimited`);
   * a failure that `isConflict` says is a 409 spends one from the budget.
   */
  readonly guarded: <A, E, R>(
    id: string,
    keyId: string,
    submit: Effect.Effect<A, E, R>,
    isConflict: (error: E) => boolean
  ) => Effect.Effect<A, E | RateLimit.RateLimited, R>
}

/** The conflicts left to a quote id, as of `at` (ms). */
interface Budget {
  tokens: number
  at: number
}

/** A guard with its own budgets and locks, in this process's memory. */
export const make: Effect.Effect<Guard> = Effect.sync(() => {
  const budgets = new Map<string, Budget>()
  const locks = new Map<string, { readonly semaphore: Semaphore.Semaphore; users: number }>()
  const refillPerMilli = 1 / (budget.refillEverySeconds * 1000)

  /** The conflicts left to `id` at `now`, refilled since its last one (its entry moved to the newest). */
  const left = (id: string, now: number): Budget | undefined => {
    const known = budgets.get(id)
    if (known === undefined) return undefined
    known.tokens = Math.min(budget.burst, known.tokens + (now - known.at) * refillPerMilli)
    known.at = now
    budgets.delete(id)
    if (known.tokens >= budget.burst) return undefined
    budgets.set(id, known)
    return known
  }

  const conflicted = (id: string, keyId: string, now: number) => {
    const known = left(id, now) ?? { tokens: budget.burst, at: now }
    known.tokens -= 1
    budgets.delete(id)
    if (budgets.size >= capacity) budgets.delete(budgets.keys().next().value!)
    budgets.set(id, known)
    if (known.tokens >= 1) return Effect.void
    return Effect.logWarning(
      `gateway: a quote of the API key ${keyId} had ${budget.burst} Idempotency-Key conflicts (409): its POSTs are ` +
        `refused (429) for ${budget.refillEverySeconds} s. A client that reuses a key for another card, or someone ` +
        "testing cards."
    ).pipe(Effect.annotateLogs({ quoteId: id }))
  }

  const serialized = <A, E, R>(id: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      let lock = locks.get(id)
      if (lock === undefined) {
        lock = { semaphore: Semaphore.makeUnsafe(1), users: 0 }
        locks.set(id, lock)
      }
      const held = lock
      held.users++
      return held.semaphore.withPermits(1)(effect).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (--held.users === 0) locks.delete(id)
        }))
      )
    })

  const guarded = <A, E, R>(
    id: string,
    keyId: string,
    submit: Effect.Effect<A, E, R>,
    isConflict: (error: E) => boolean
  ): Effect.Effect<A, E | RateLimit.RateLimited, R> =>
    serialized(
      id,
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<A, E | RateLimit.RateLimited, R> => {
        const known = left(id, now)
        if (known !== undefined && known.tokens < 1) {
          const seconds = Math.ceil((1 - known.tokens) / refillPerMilli / 1000)
          return Effect.fail(new RateLimit.RateLimited({ retryAfterSeconds: Math.max(1, seconds) }))
        }
        return submit.pipe(
          Effect.tapError((error) =>
            isConflict(error)
              ? Effect.flatMap(Clock.currentTimeMillis, (at) => conflicted(id, keyId, at))
              : Effect.void
          )
        )
      })
    )

  return { guarded }
})
