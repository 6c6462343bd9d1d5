/**
 * The sandbox's mutable state: transactions, the idempotency record of each
 * (partner, requestId), and which partners are disabled. A transaction is
 * stored once, with its settled plan; its progress is computed on read
 * (`Lifecycle`), so in-flight transactions cost nothing.
 */
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
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
export class Store extends Context.Tag("@gcx/sandbox/Store")<Store, {
  /** Stores the transaction unless its partner already used its requestId (see `Creation`). */
  readonly create: (transaction: Transaction) => Effect.Effect<Creation>
  readonly get: (transactionId: string) => Effect.Effect<Option.Option<Transaction>>
  /** Every transaction, oldest first. */
  readonly all: Effect.Effect<ReadonlyArray<Transaction>>
  readonly isEnabled: (clientId: string) => Effect.Effect<boolean>
  readonly setEnabled: (clientId: string, enabled: boolean) => Effect.Effect<void>
  /** Forgets every transaction and requestId and enables every partner. */
  readonly reset: Effect.Effect<void>
}>() {}

interface Attempt {
  readonly transactionId: string
  readonly previousAttempts: number
}

interface State {
  readonly transactions: HashMap.HashMap<string, Transaction>
  readonly order: Chunk.Chunk<string>
  readonly attempts: HashMap.HashMap<string, Attempt>
  readonly disabled: HashSet.HashSet<string>
}

const empty: State = {
  transactions: HashMap.empty(),
  order: Chunk.empty(),
  attempts: HashMap.empty(),
  disabled: HashSet.empty()
}

const idempotencyKey = (transaction: Transaction): string => `${transaction.clientId}\u0000${transaction.requestId}`

const create = (state: State, transaction: Transaction): readonly [Creation, State] => {
  const key = idempotencyKey(transaction)
  return Option.match(HashMap.get(state.attempts, key), {
    onNone: () => [{ _tag: "Created", transaction }, {
      ...state,
      transactions: HashMap.set(state.transactions, transaction.id, transaction),
      order: Chunk.append(state.order, transaction.id),
      attempts: HashMap.set(state.attempts, key, {
        transactionId: transaction.id,
        previousAttempts: transaction.previousAttempts
      })
    }],
    onSome: (attempt) =>
      transaction.previousAttempts > attempt.previousAttempts
        ? [
          { _tag: "Replayed", transaction: HashMap.unsafeGet(state.transactions, attempt.transactionId) },
          {
            ...state,
            attempts: HashMap.set(state.attempts, key, { ...attempt, previousAttempts: transaction.previousAttempts })
          }
        ]
        : [{ _tag: "Duplicate" }, state]
  })
}

/** Builds an empty store. */
export const make: Effect.Effect<Store["Type"]> = Effect.map(Ref.make(empty), (state) =>
  Store.of({
    create: (transaction) => Ref.modify(state, (current) => create(current, transaction)),
    get: (transactionId) => Effect.map(Ref.get(state), (current) => HashMap.get(current.transactions, transactionId)),
    all: Effect.map(Ref.get(state), (current) =>
      Chunk.toReadonlyArray(Chunk.map(current.order, (id) => HashMap.unsafeGet(current.transactions, id)))),
    isEnabled: (clientId) =>
      Effect.map(Ref.get(state), (current) => !HashSet.has(current.disabled, clientId)),
    setEnabled: (clientId, enabled) =>
      Ref.update(state, (current) => ({
        ...current,
        disabled: enabled ? HashSet.remove(current.disabled, clientId) : HashSet.add(current.disabled, clientId)
      })),
    reset: Ref.set(state, empty)
  }))
