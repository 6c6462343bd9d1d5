/**
 * The request journal: how many requests each route saw (faulted ones
 * included), which transactions each requestId created, how often each
 * transaction was read, and the latest requests in order. It holds no
 * secrets: no credentials, tokens, card numbers or PINs.
 */
import { Wire } from "@gcx/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Schema from "effect/Schema"
import { FaultKind } from "./Faults.js"

/** The routes the journal counts. `other` is everything unknown, plus `/openapi.json` and `/docs`. */
export const Route = Schema.Literals(["token", "heartbeat", "createQuote", "getTransaction", "admin", "other"])

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
  status: Schema.optionalKey(Schema.Int),
  requestId: Schema.optionalKey(Schema.String),
  previousAttempts: Schema.optionalKey(Schema.Int),
  transactionId: Schema.optionalKey(Schema.String),
  /** The fault kinds injected into this request. */
  faults: Schema.optionalKey(Schema.Array(FaultKind))
}).annotate({ identifier: "JournalEntry" })

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
  /** requestId -> the distinct transaction ids its POSTs answered with, in order (those the store still keeps). */
  transactionsByRequestId: Schema.Record(Schema.String, Schema.Array(Schema.String)),
  /** transactionId -> how many GETs read it (for the transactions the store still keeps). */
  getsByTransactionId: Schema.Record(Schema.String, Schema.Int),
  /** The latest requests, oldest first (at most `maxEntries`). */
  entries: Schema.Array(Entry)
}).annotate({ identifier: "Journal" })

/** A snapshot of the journal. */
export type Journal = typeof Journal.Type

/** How many entries the journal keeps; the counts cover every request. */
export const maxEntries = 10_000

/**
 * The transaction each request created or read, by the request's underlying
 * (node) request object; one map per process, however many copies of this
 * module are loaded.
 */
const transactions: WeakMap<object, string> = (() => {
  const key = Symbol.for("@gcx/sandbox/Journal/transactions")
  const holder = globalThis as { [key]?: WeakMap<object, string> }
  return holder[key] ??= new WeakMap<object, string>()
})()

const sourceOf = (request: HttpServerRequest.HttpServerRequest): object => request.source as object

/** Marks the transaction that `request` created or read, for its journal entry, at once (from inside its fiber). */
export const unsafeAnnotateTransaction = (
  request: HttpServerRequest.HttpServerRequest,
  transactionId: string
): void => {
  transactions.set(sourceOf(request), transactionId)
}

/** Marks the transaction that `request` created or read, for its journal entry. */
export const annotateTransaction = (
  request: HttpServerRequest.HttpServerRequest,
  transactionId: string
): Effect.Effect<void> => Effect.sync(() => unsafeAnnotateTransaction(request, transactionId))

/** The transaction that `request` created or read, if any. */
export const annotatedTransaction = (request: HttpServerRequest.HttpServerRequest): string | undefined =>
  transactions.get(sourceOf(request))

/** Where a reader of the journal stands: the reset it read after and how many entries it read since. */
export interface Cursor {
  readonly resets: number
  readonly appended: number
}

/** What `Recorder.since` gives: the entries recorded after a cursor, newest first, and the cursor to ask from next. */
export interface Since {
  readonly entries: ReadonlyArray<Entry>
  readonly cursor: Cursor
  /** The journal was reset after the cursor (or there was none): `entries` are the latest ones. */
  readonly restarted: boolean
}

/** The journal of one sandbox. */
export class Recorder extends Context.Service<Recorder, {
  readonly record: (entry: Entry) => Effect.Effect<void>
  readonly snapshot: Effect.Effect<Journal>
  /** The requests per route so far. */
  readonly snapshotCounts: Effect.Effect<RequestCounts>
  /** The latest `count` entries, newest first. */
  readonly recent: (count: number) => Effect.Effect<ReadonlyArray<Entry>>
  /**
   * The entries recorded after `cursor` (at most `count`, newest first), in
   * time that grows with `count`, not with the journal; without a cursor,
   * or after a reset, the latest `count`.
   */
  readonly since: (cursor: Cursor | undefined, count: number) => Effect.Effect<Since>
  /**
   * Drops a transaction from the indexes (`transactionsByRequestId`,
   * `getsByTransactionId`), at once: the store calls it when it evicts the
   * transaction, so that the indexes stay as bounded as the store.
   */
  readonly unsafeForget: (transactionId: string) => void
  readonly reset: Effect.Effect<void>
}>()("@gcx/sandbox/Journal/Recorder") {}

const emptyCounts = (): { -readonly [K in keyof RequestCounts]: number } => ({
  token: 0,
  heartbeat: 0,
  createQuote: 0,
  getTransaction: 0,
  admin: 0,
  other: 0
})

/**
 * Builds an empty journal. Its state lives in plain maps and an array touched
 * only inside `Effect.sync` (or synchronously by the store), so each record is
 * atomic on the single JavaScript thread and costs a few map operations.
 *
 * The indexes hold only transactions the store keeps: `unsafeForget` drops an
 * evicted one. The entries are bounded by `maxEntries`.
 */
export const makeRecorder: Effect.Effect<Recorder["Service"]> = Effect.sync(() => {
  let requests = emptyCounts()
  let transactionsByRequestId = new Map<string, Array<string>>()
  // The requestId each indexed transaction is listed under, so that forgetting it is two map operations.
  let requestIdOfTransaction = new Map<string, string>()
  let getsByTransactionId = new Map<string, number>()
  let entries: Array<Entry> = []
  let resets = 0
  let appended = 0
  const since = (cursor: Cursor | undefined, count: number): Since => {
    const restarted = cursor === undefined || cursor.resets !== resets
    const fresh = Math.min(count, restarted ? entries.length : appended - cursor.appended)
    return {
      entries: fresh > 0 ? entries.slice(-fresh).reverse() : [],
      cursor: { resets, appended },
      restarted
    }
  }
  const append = (entry: Entry): void => {
    const { requestId, route, transactionId } = entry
    requests[route]++
    if (route === "createQuote" && transactionId !== undefined && requestId !== undefined) {
      const ids = transactionsByRequestId.get(requestId)
      if (ids === undefined) transactionsByRequestId.set(requestId, [transactionId])
      else if (!ids.includes(transactionId)) ids.push(transactionId)
      requestIdOfTransaction.set(transactionId, requestId)
    } else if (route === "getTransaction" && transactionId !== undefined) {
      getsByTransactionId.set(transactionId, (getsByTransactionId.get(transactionId) ?? 0) + 1)
    }
    entries.push(entry)
    appended++
    // Trimmed in batches, so that appending stays cheap under load.
    if (entries.length > 2 * maxEntries) entries = entries.slice(-maxEntries)
  }
  return Recorder.of({
    record: (entry) => Effect.sync(() => append(entry)),
    snapshot: Effect.sync((): Journal => ({
      requests: { ...requests },
      transactionsByRequestId: Object.fromEntries(
        Array.from(transactionsByRequestId, ([requestId, ids]) => [requestId, [...ids]])
      ),
      getsByTransactionId: Object.fromEntries(getsByTransactionId),
      entries: entries.slice(-maxEntries)
    })),
    snapshotCounts: Effect.sync(() => ({ ...requests })),
    recent: (count) => Effect.sync(() => since(undefined, count).entries),
    since: (cursor, count) => Effect.sync(() => since(cursor, count)),
    unsafeForget: (transactionId) => {
      getsByTransactionId.delete(transactionId)
      const requestId = requestIdOfTransaction.get(transactionId)
      if (requestId === undefined) return
      requestIdOfTransaction.delete(transactionId)
      const ids = transactionsByRequestId.get(requestId)?.filter((id) => id !== transactionId)
      if (ids === undefined || ids.length === 0) transactionsByRequestId.delete(requestId)
      else transactionsByRequestId.set(requestId, ids)
    },
    reset: Effect.sync(() => {
      requests = emptyCounts()
      transactionsByRequestId = new Map()
      requestIdOfTransaction = new Map()
      getsByTransactionId = new Map()
      entries = []
      resets++
      appended = 0
    })
  })
})
