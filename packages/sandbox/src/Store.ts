/**
 * The sandbox's mutable state: transactions, the idempotency record of each
 * (partner, requestId), and which partners are disabled. A transaction is
 * stored once, with its settled plan; its progress is computed on read
 * (`Lifecycle`), so in-flight transactions cost nothing. At most
 * `maxTransactions` are kept, the oldest finished evicted first.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Plan } from "./Scenarios.js"

/** A stored transaction. It holds the card number masked and never the PIN. */
export interface Transaction {
  readonly id: string
  readonly clientId: string
  readonly creatorId: number
  readonly requestId: string
  readonly previousAttempts: number
  /** When the POST created it, in epoch milliseconds (from `Clock`). */
  readonly createdAt: number
  /** The card number masked to its last 4 digits. */
  readonly maskedCardNumber: string
  readonly productLineId: string
  readonly plan: Plan
}

/**
 * What a POST did (service-notes.md, idempotency): created a transaction;
 * replayed the original one because `previousAttempts` went up; or refused a
 * repeat whose `previousAttempts` did not go up.
 */
export type Creation =
  | { readonly _tag: "Created"; readonly transaction: Transaction }
  | { readonly _tag: "Replayed"; readonly transaction: Transaction }
  | { readonly _tag: "Duplicate" }

/** The state of one sandbox. */
export class Store extends Context.Service<Store, {
  /** Stores the transaction unless its partner already used its requestId (see `Creation`). */
  readonly create: (transaction: Transaction) => Effect.Effect<Creation>
  readonly get: (transactionId: string) => Effect.Effect<Option.Option<Transaction>>
  /** Every transaction, oldest first. */
  readonly all: Effect.Effect<ReadonlyArray<Transaction>>
  /** The latest `count` transactions, newest first, in time that grows with `count`, not with the store. */
  readonly latest: (count: number) => Effect.Effect<ReadonlyArray<Transaction>>
  /**
   * Moves on whenever a transaction is stored or evicted and on reset (not
   * when time moves a transaction's progress on): an unchanged version means
   * an unchanged set of transactions.
   */
  readonly version: Effect.Effect<number>
  readonly isEnabled: (clientId: string) => Effect.Effect<boolean>
  readonly setEnabled: (clientId: string, enabled: boolean) => Effect.Effect<void>
  /** Forgets every transaction and requestId and enables every partner. */
  readonly reset: Effect.Effect<void>
}>()("@gcx/sandbox/Store") {}

interface Attempt {
  readonly transactionId: string
  readonly previousAttempts: number
}

/** How many transactions (and their idempotency records) a store keeps by default. */
export const defaultMaxTransactions = 100_000

const idempotencyKey = (transaction: Transaction): string => `${transaction.clientId}\u0000${transaction.requestId}`

const isFinished = (transaction: Transaction, now: number): boolean =>
  now >= transaction.createdAt + transaction.plan.durationMillis

/**
 * Builds an empty store that keeps at most `maxTransactions` transactions
 * (default 100,000). Past that, each new transaction evicts the oldest
 * finished one (completed or failed), or the oldest one when none has
 * finished, with its idempotency record: a later retry of its requestId
 * creates a new transaction, and a GET of its id answers 404; `onEvict` is
 * told.
 *
 * The state lives in insertion-ordered maps touched only inside `Effect.sync`,
 * so every operation is atomic on the single JavaScript thread. The
 * transactions are also listed in an array, newest last, for `latest`: an
 * evicted one stays there (skipped) until the array is compacted, once it
 * holds as many evicted transactions as kept ones.
 */
export const make = (
  options: {
    readonly maxTransactions?: number | undefined
    /** Called, synchronously, with each transaction evicted (e.g. to drop it from the journal's indexes). */
    readonly onEvict?: ((transaction: Transaction) => void) | undefined
  } = {}
): Effect.Effect<Store["Service"]> =>
  Effect.sync(() => {
    const maxTransactions = Math.max(1, options.maxTransactions ?? defaultMaxTransactions)
    const transactions = new Map<string, Transaction>()
    const attempts = new Map<string, Attempt>()
    const disabled = new Set<string>()
    let order: Array<Transaction> = []
    let version = 0
    const isKept = (transaction: Transaction): boolean => transactions.get(transaction.id) === transaction
    const evictOne = (now: number): void => {
      let victim: Transaction | undefined
      for (const transaction of transactions.values()) {
        if (isFinished(transaction, now)) {
          victim = transaction
          break
        }
      }
      victim ??= transactions.values().next().value!
      transactions.delete(victim.id)
      const key = idempotencyKey(victim)
      if (attempts.get(key)?.transactionId === victim.id) attempts.delete(key)
      options.onEvict?.(victim)
    }
    const create = (transaction: Transaction): Creation => {
      const key = idempotencyKey(transaction)
      const attempt = attempts.get(key)
      if (attempt === undefined) {
        transactions.set(transaction.id, transaction)
        attempts.set(key, { transactionId: transaction.id, previousAttempts: transaction.previousAttempts })
        order.push(transaction)
        while (transactions.size > maxTransactions) evictOne(transaction.createdAt)
        if (order.length > 2 * transactions.size) order = order.filter(isKept)
        version++
        return { _tag: "Created", transaction }
      }
      if (transaction.previousAttempts <= attempt.previousAttempts) return { _tag: "Duplicate" }
      attempts.set(key, { ...attempt, previousAttempts: transaction.previousAttempts })
      return { _tag: "Replayed", transaction: transactions.get(attempt.transactionId)! }
    }
    return Store.of({
      create: (transaction) => Effect.sync(() => create(transaction)),
      get: (transactionId) => Effect.sync(() => Option.fromNullishOr(transactions.get(transactionId))),
      all: Effect.sync(() => Array.from(transactions.values())),
      latest: (count) =>
        Effect.sync(() => {
          const latest: Array<Transaction> = []
          for (let index = order.length - 1; index >= 0 && latest.length < count; index--) {
            if (isKept(order[index]!)) latest.push(order[index]!)
          }
          return latest
        }),
      version: Effect.sync(() => version),
      isEnabled: (clientId) => Effect.sync(() => !disabled.has(clientId)),
      setEnabled: (clientId, enabled) =>
        Effect.sync(() => {
          if (enabled) disabled.delete(clientId)
          else disabled.add(clientId)
        }),
      reset: Effect.sync(() => {
        transactions.clear()
        attempts.clear()
        disabled.clear()
        order = []
        version++
      })
    })
  })
