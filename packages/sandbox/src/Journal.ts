/**
 * The request journal: how many requests each route saw (faulted ones
 * included), which transactions each requestId created, how often each
 * transaction was read, and the latest requests in order. It holds no
 * secrets: no credentials, tokens, card numbers or PINs.
 */
import { Wire } from "@gcx/core"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Record from "effect/Record"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { FaultKind } from "./Faults.js"

/** The routes the journal counts. `other` is everything unknown, plus `/openapi.json` and `/docs`. */
export const Route = Schema.Literal("token", "heartbeat", "createQuote", "getTransaction", "admin", "other")

/** The routes the journal counts. */
export type Route = typeof Route.Type

/** One request, as the journal keeps it. */
export const Entry = Schema.Struct({
  time: Wire.Timestamp,
  route: Route,
  method: Schema.String,
  /** The path without its query string. */
  path: Schema.String,
  /** The status answered; absent when the connection was reset before any answer. */
  status: Schema.optional(Schema.Int),
  requestId: Schema.optional(Schema.String),
  previousAttempts: Schema.optional(Schema.Int),
  transactionId: Schema.optional(Schema.String),
  /** The fault kinds injected into this request. */
  faults: Schema.optional(Schema.Array(FaultKind))
}).annotations({ identifier: "JournalEntry" })

/** One request, as the journal keeps it. */
export type Entry = typeof Entry.Type

/** Requests per route. */
export const RequestCounts = Schema.Struct({
  token: Schema.Int,
  heartbeat: Schema.Int,
  createQuote: Schema.Int,
  getTransaction: Schema.Int,
  admin: Schema.Int,
  other: Schema.Int
})

/** Requests per route. */
export type RequestCounts = typeof RequestCounts.Type

/** A snapshot of the journal. */
export const Journal = Schema.Struct({
  requests: RequestCounts,
  /** requestId -> the distinct transaction ids its POSTs answered with, in order. */
  transactionsByRequestId: Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) }),
  /** transactionId -> how many GETs read it. */
  getsByTransactionId: Schema.Record({ key: Schema.String, value: Schema.Int }),
  /** The latest requests, oldest first (at most `maxEntries`). */
  entries: Schema.Array(Entry)
}).annotations({ identifier: "Journal" })

/** A snapshot of the journal. */
export type Journal = typeof Journal.Type

/** How many entries the journal keeps; the counts cover every request. */
export const maxEntries = 10_000

const currentTransaction = globalValue(
  Symbol.for("@gcx/sandbox/Journal/currentTransaction"),
  () => FiberRef.unsafeMake(Option.none<string>())
)

/** Marks the transaction that the current request created or read, for its journal entry. */
export const annotateTransaction = (transactionId: string): Effect.Effect<void> =>
  FiberRef.set(currentTransaction, Option.some(transactionId))

/** The transaction that the current request created or read, if any. */
export const annotatedTransaction: Effect.Effect<Option.Option<string>> = FiberRef.get(currentTransaction)

/** The journal of one sandbox. */
export class Recorder extends Context.Tag("@gcx/sandbox/Journal/Recorder")<Recorder, {
  readonly record: (entry: Entry) => Effect.Effect<void>
  readonly snapshot: Effect.Effect<Journal>
  readonly reset: Effect.Effect<void>
}>() {}

interface State {
  readonly requests: RequestCounts
  readonly transactionsByRequestId: HashMap.HashMap<string, ReadonlyArray<string>>
  readonly getsByTransactionId: HashMap.HashMap<string, number>
  readonly entries: Chunk.Chunk<Entry>
}

const empty: State = {
  requests: { token: 0, heartbeat: 0, createQuote: 0, getTransaction: 0, admin: 0, other: 0 },
  transactionsByRequestId: HashMap.empty(),
  getsByTransactionId: HashMap.empty(),
  entries: Chunk.empty()
}

const append = (state: State, entry: Entry): State => {
  const { requestId, route, transactionId } = entry
  const created = route === "createQuote" && transactionId !== undefined && requestId !== undefined
  const read = route === "getTransaction" && transactionId !== undefined
  const entries = Chunk.append(state.entries, entry)
  return {
    requests: { ...state.requests, [route]: state.requests[route] + 1 },
    transactionsByRequestId: created
      ? HashMap.modifyAt(state.transactionsByRequestId, requestId, (ids) =>
        Option.some(Option.match(ids, {
          onNone: () => [transactionId],
          onSome: (ids) => ids.includes(transactionId) ? ids : [...ids, transactionId]
        })))
      : state.transactionsByRequestId,
    getsByTransactionId: read
      ? HashMap.modifyAt(state.getsByTransactionId, transactionId, (n) => Option.some(Option.getOrElse(n, () => 0) + 1))
      : state.getsByTransactionId,
    // Trimmed in batches, so that appending stays cheap under load.
    entries: Chunk.size(entries) > 2 * maxEntries ? Chunk.takeRight(entries, maxEntries) : entries
  }
}

const toJournal = (state: State): Journal => ({
  requests: state.requests,
  transactionsByRequestId: Record.fromEntries(state.transactionsByRequestId),
  getsByTransactionId: Record.fromEntries(state.getsByTransactionId),
  entries: Chunk.toReadonlyArray(Chunk.takeRight(state.entries, maxEntries))
})

/** Builds an empty journal. */
export const makeRecorder: Effect.Effect<Recorder["Type"]> = Effect.map(Ref.make(empty), (state) =>
  Recorder.of({
    record: (entry) => Ref.update(state, (current) => append(current, entry)),
    snapshot: Effect.map(Ref.get(state), toJournal),
    reset: Ref.set(state, empty)
  }))
