/**
 * The journal: a durable record of every transaction in flight, so that a
 * restarted process can resume them and nothing is lost.
 *
 * It sits on a `KeyValueStore`, as one record under one key, rewritten whole
 * on every change. On the file system each write is atomic (a temporary file
 * renamed over the old one), so a process killed at any moment leaves the
 * journal as it was before or after the change, never torn. Concurrent changes
 * are committed together: a change waits for the first write that includes it,
 * so a batch of quotes costs a few writes, not one per quote.
 *
 * It is made for the transactions one process has in flight (thousands, not
 * millions), and for one process at a time per journal.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { Wire } from "@gcx/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as KeyValueStore from "effect/persistence/KeyValueStore"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as AtomicStore from "./internal/atomicStore.js"

/** One transaction in flight. Card data appears only masked. */
export class JournalEntry extends Schema.Class<JournalEntry>("@gcx/poller/JournalEntry")({
  transactionId: Schema.String,
  requestId: Schema.String,
  submittedAt: Wire.Timestamp,
  /** The masked card number (last 4 digits at most). */
  card: Schema.String,
  productLineId: Schema.String,
  location: Schema.optionalKey(Schema.String)
}) {}

/** The journal's store failed. */
export class JournalError extends Schema.TaggedError<JournalError>()("JournalError", {
  operation: Schema.String,
  message: Schema.String
}) {}

/** The journal service. */
export class QuoteJournal extends Context.Service<QuoteJournal, {
  /** Records a transaction as in flight; returns once the record is durable. */
  readonly record: (entry: JournalEntry) => Effect.Effect<void, JournalError>
  /** Removes a transaction whose outcome is known; returns once the removal is durable. */
  readonly remove: (transactionId: string) => Effect.Effect<void, JournalError>
  /** Every transaction in flight, oldest first. */
  readonly entries: Effect.Effect<ReadonlyArray<JournalEntry>>
}>()("@gcx/poller/QuoteJournal") {}

/** The key the journal is stored under. */
export const storeKey = "gcx-journal"

const Record = Schema.fromJsonString(Schema.Struct({ version: Schema.Literal(1), entries: Schema.Array(JournalEntry) }))

/**
 * Builds a journal over the `KeyValueStore` in context. A record that cannot be
 * read fails with `JournalError`, rather than starting empty and losing what it
 * held.
 */
export const make: Effect.Effect<QuoteJournal["Service"], JournalError, KeyValueStore.KeyValueStore> = Effect.gen(
  function*() {
    const store = yield* KeyValueStore.KeyValueStore
    const failWith = (operation: string) => (error: { readonly message: string }) =>
      new JournalError({ operation, message: error.message })
    const stored = yield* store.get(storeKey).pipe(Effect.mapError(failWith("load")))
    const loaded: ReadonlyArray<JournalEntry> = stored === undefined ?
      [] :
      yield* Schema.decodeEffect(Record)(stored).pipe(
        Effect.map((record) => record.entries),
        Effect.mapError(() => new JournalError({ operation: "load", message: "the journal record does not decode" }))
      )
    const entries = new Map(loaded.map((entry) => [entry.transactionId, entry]))
    // Group commit: `changed` counts changes made in memory, `persisted` the changes the store holds.
    let changed = 0
    let persisted = 0
    const lock = yield* Semaphore.make(1)
    const commit = (change: number) =>
      Effect.suspend(() => {
        if (persisted >= change) return Effect.void
        const upTo = changed
        const text = Schema.encodeSync(Record)({ version: 1, entries: [...entries.values()] })
        return store.set(storeKey, text).pipe(
          Effect.tap(() => Effect.sync(() => (persisted = Math.max(persisted, upTo)))),
          Effect.mapError(failWith("write"))
        )
      }).pipe(lock.withPermits(1))
    const change = (apply: () => boolean) => Effect.suspend(() => (apply() ? commit(++changed) : Effect.void))

    return QuoteJournal.of({
      record: (entry) =>
        change(() => {
          entries.set(entry.transactionId, entry)
          return true
        }),
      remove: (transactionId) => change(() => entries.delete(transactionId)),
      entries: Effect.sync(() => [...entries.values()])
    })
  }
)

/** A journal over the `KeyValueStore` in context. */
export const layerKeyValueStore: Layer.Layer<QuoteJournal, JournalError, KeyValueStore.KeyValueStore> = Layer.effect(
  QuoteJournal,
  make
)

/** A journal in a file under `directory`, written atomically: the default for processes that must survive a restart. */
export const layerFileSystem = (directory: string): Layer.Layer<QuoteJournal, JournalError> =>
  layerKeyValueStore.pipe(
    Layer.provide(Layer.effect(KeyValueStore.KeyValueStore, AtomicStore.make(directory))),
    Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer))
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
