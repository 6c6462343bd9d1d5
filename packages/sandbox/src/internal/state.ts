import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Faults from "../Faults.js"
import * as Journal from "../Journal.js"
import * as Lifecycle from "../Lifecycle.js"
import { Store } from "../Store.js"
import { Tokens } from "../Tokens.js"

/** Every transaction as the admin API lists it, oldest first. */
export const transactions: Effect.Effect<ReadonlyArray<Lifecycle.Summary>, never, Store> = Effect.gen(function*() {
  const all = yield* (yield* Store).all
  const now = yield* Clock.currentTimeMillis
  return all.map((transaction) => Lifecycle.summaryAt(transaction, now))
})

/** Clears transactions, requestIds, the journal and the faults; enables every partner; restores the token lifetime. */
export const reset: Effect.Effect<void, never, Store | Journal.Recorder | Faults.FaultInjector | Tokens> = Effect.gen(
  function*() {
    yield* (yield* Store).reset
    yield* (yield* Journal.Recorder).reset
    yield* (yield* Faults.FaultInjector).set([])
    yield* (yield* Tokens).reset
  }
)
