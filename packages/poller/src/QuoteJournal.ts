/**
 * The journal: a durable record of every transaction in flight, so that a
 * restarted process can resume them and nothing is lost.
 *
 * It sits on a `KeyValueStore`: one key per transaction, plus an index of the
 * transaction ids (the store cannot list its keys). The index is written to two
 * keys in turn, each with a sequence number, so that a crash in the middle of
 * a write leaves the previous index whole.
 */
import * as NodeKeyValueStore from "@effect/platform-node/NodeKeyValueStore"
import * as KeyValueStore from "@effect/platform/KeyValueStore"
import { Wire } from "@gcx/core"
import * as Arr from "effect/Array"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** One transaction in flight. Card data appears only masked. */
export class JournalEntry extends Schema.Class<JournalEntry>("@gcx/poller/JournalEntry")({
  transactionId: Schema.String,
  requestId: Schema.String,
  submittedAt: Wire.Timestamp,
  /** The masked card number (last 4 digits at most). */
  card: Schema.String,
  productLineId: Schema.String,
  location: Schema.optionalWith(Schema.String, { exact: true })
}) {}

/** The journal's store failed. */
export class JournalError extends Schema.TaggedError<JournalError>()("JournalError", {
  operation: Schema.String,
  message: Schema.String
}) {}

/** The journal service. */
export class QuoteJournal extends Context.Tag("@gcx/poller/QuoteJournal")<QuoteJournal, {
  /** Records a transaction as in flight. */
  readonly record: (entry: JournalEntry) => Effect.Effect<void, JournalError>
  /** Removes a transaction whose outcome is known. */
  readonly remove: (transactionId: string) => Effect.Effect<void, JournalError>
  /** Every transaction in flight, oldest first. */
  readonly entries: Effect.Effect<ReadonlyArray<JournalEntry>, JournalError>
}>() {}

const Index = Schema.parseJson(Schema.Struct({ sequence: Schema.Number, ids: Schema.Array(Schema.String) }))
const Entry = Schema.parseJson(JournalEntry)
const indexKeys = ["index-a", "index-b"] as const
const entryKey = (transactionId: string) => `tx-${transactionId}`

/** Builds a journal over the `KeyValueStore` in context. */
export const make: Effect.Effect<QuoteJournal["Type"], JournalError, KeyValueStore.KeyValueStore> = Effect.gen(
  function*() {
    const store = yield* KeyValueStore.KeyValueStore
    const fail = (operation: string) => (error: { readonly message: string }) =>
      new JournalError({ operation, message: error.message })
    const readIndex = (key: string) =>
      store.get(key).pipe(
        Effect.map(Option.flatMap(Schema.decodeOption(Index))),
        Effect.mapError(fail("load"))
      )
    const loaded = yield* Effect.all(indexKeys.map(readIndex))
    const newest = Option.reduceCompact(
      loaded,
      { sequence: -1, ids: [] as ReadonlyArray<string> },
      (a, b) => (b.sequence > a.sequence ? b : a)
    )
    const ids = new Set(newest.ids)
    let sequence = newest.sequence
    const lock = yield* Effect.makeSemaphore(1)
    const writeIndex = Effect.suspend(() => {
      sequence += 1
      const encoded = Schema.encodeSync(Index)({ sequence, ids: [...ids] })
      return store.set(indexKeys[sequence % 2]!, encoded)
    }).pipe(Effect.mapError(fail("index")))

    return QuoteJournal.of({
      record: (entry) =>
        Effect.gen(function*() {
          yield* store.set(entryKey(entry.transactionId), Schema.encodeSync(Entry)(entry)).pipe(
            Effect.mapError(fail("record"))
          )
          if (ids.has(entry.transactionId)) return
          ids.add(entry.transactionId)
          yield* writeIndex
        }).pipe(lock.withPermits(1)),
      remove: (transactionId) =>
        Effect.gen(function*() {
          if (!ids.delete(transactionId)) return
          yield* writeIndex
          yield* store.remove(entryKey(transactionId)).pipe(Effect.mapError(fail("remove")))
        }).pipe(lock.withPermits(1)),
      entries: Effect.suspend(() =>
        Effect.forEach([...ids], (transactionId) =>
          store.get(entryKey(transactionId)).pipe(
            Effect.map(Option.flatMap(Schema.decodeOption(Entry))),
            Effect.mapError(fail("entries"))
          )).pipe(Effect.map(Arr.getSomes))
      )
    })
  }
)

/** A journal over the `KeyValueStore` in context. */
export const layerKeyValueStore: Layer.Layer<QuoteJournal, JournalError, KeyValueStore.KeyValueStore> = Layer.effect(
  QuoteJournal,
  make
)

/** A journal in files under `directory` (the default for processes that must survive a restart). */
export const layerFileSystem = (directory: string): Layer.Layer<QuoteJournal, JournalError> =>
  layerKeyValueStore.pipe(
    Layer.provide(
      NodeKeyValueStore.layerFileSystem(directory).pipe(
        Layer.mapError((error) => new JournalError({ operation: "open", message: error.message }))
      )
    )
  )

/** A journal in memory, for tests. */
export const layerMemory: Layer.Layer<QuoteJournal> = layerKeyValueStore.pipe(
  Layer.provide(KeyValueStore.layerMemory),
  Layer.orDie
)

/** A journal that records nothing, for callers that want no durability. */
export const layerNoop: Layer.Layer<QuoteJournal> = Layer.succeed(
  QuoteJournal,
  QuoteJournal.of({ record: () => Effect.void, remove: () => Effect.void, entries: Effect.succeed([]) })
)
