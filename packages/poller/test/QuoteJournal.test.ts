import { describe, expect, it } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import * as KeyValueStore from "effect/persistence/KeyValueStore"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { QuoteJournal } from "../src/index.js"

const entry = (n: number) =>
  new QuoteJournal.JournalEntry({
    transactionId: `TX${n}`,
    requestId: `req${n}`,
    submittedAt: DateTime.makeUnsafe(1_700_000_000_000 + n),
    card: "****0001",
    productLineId: "1000"
  })

const roundTrip = Effect.gen(function*() {
  const journal = yield* QuoteJournal.QuoteJournal
  yield* Effect.forEach([1, 2, 3], (n) => journal.record(entry(n)))
  yield* journal.record(entry(2))
  yield* journal.remove("TX1")
  yield* journal.remove("TX-unknown")
  return (yield* journal.entries).map((e) => e.transactionId)
})

describe("QuoteJournal", () => {
  it.effect("records, deduplicates and removes in memory", () =>
    Effect.gen(function*() {
      expect(yield* roundTrip).toEqual(["TX2", "TX3"])
    }).pipe(Effect.provide(QuoteJournal.layerMemory)))

  it.live("survives a restart on the file system", () =>
    Effect.gen(function*() {
      const directory = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-journal-"))
      expect(yield* roundTrip.pipe(Effect.provide(QuoteJournal.layerFileSystem(directory)))).toEqual(["TX2", "TX3"])
      const reopened = yield* Effect.flatMap(QuoteJournal.QuoteJournal, (journal) => journal.entries).pipe(
        Effect.provide(QuoteJournal.layerFileSystem(directory))
      )
      expect(reopened.map((e) => e.transactionId)).toEqual(["TX2", "TX3"])
      expect(reopened[0]!.card).toBe("****0001")
      fs.rmSync(directory, { recursive: true, force: true })
    }))

  it.live("its folder and files are the user's alone: 0700 and 0600", () =>
    Effect.gen(function*() {
      const parent = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-journal-"))
      const directory = path.join(parent, ".gcx", "journal")
      yield* roundTrip.pipe(Effect.provide(QuoteJournal.layerFileSystem(directory)))
      expect(fs.statSync(directory).mode & 0o777).toBe(0o700)
      expect(fs.statSync(path.dirname(directory)).mode & 0o777).toBe(0o700)
      const files = fs.readdirSync(directory)
      expect(files.length).toBeGreaterThan(0)
      for (const file of files) expect(fs.statSync(path.join(directory, file)).mode & 0o777, file).toBe(0o600)
      fs.rmSync(parent, { recursive: true, force: true })
    }))

  it.live("a write interrupted before its rename leaves the record whole", () =>
    Effect.gen(function*() {
      const directory = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-journal-"))
      yield* Effect.flatMap(QuoteJournal.QuoteJournal, (journal) => journal.record(entry(1))).pipe(
        Effect.provide(QuoteJournal.layerFileSystem(directory))
      )
      // A process killed mid-write leaves only its temporary file behind.
      fs.writeFileSync(path.join(directory, `${QuoteJournal.storeKey}.999.tmp`), "{\"version\": 1, \"entr")
      const reopened = yield* Effect.flatMap(QuoteJournal.QuoteJournal, (journal) => journal.entries).pipe(
        Effect.provide(QuoteJournal.layerFileSystem(directory))
      )
      expect(reopened.map((e) => e.transactionId)).toEqual(["TX1"])
      fs.rmSync(directory, { recursive: true, force: true })
    }))

  it.effect("a record that does not decode fails loudly instead of starting empty", () =>
    Effect.gen(function*() {
      const store = yield* KeyValueStore.KeyValueStore
      yield* store.set(QuoteJournal.storeKey, "not a journal")
      const error = yield* Effect.flip(QuoteJournal.make)
      expect(error._tag).toBe("JournalError")
      expect(error.operation).toBe("load")
    }).pipe(Effect.provide(KeyValueStore.layerMemory)))

  it.live("concurrent changes are committed together", () =>
    Effect.gen(function*() {
      const memory = yield* KeyValueStore.KeyValueStore
      let writes = 0
      const counting = KeyValueStore.makeStringOnly({
        get: memory.get,
        remove: memory.remove,
        clear: memory.clear,
        size: memory.size,
        keys: memory.keys,
        // A write takes a moment, as on a real store: changes made meanwhile share the next write.
        set: (key, value) =>
          Effect.sync(() => writes++).pipe(
            Effect.andThen(Effect.sleep("1 millis")),
            Effect.andThen(memory.set(key, value))
          )
      })
      const journal = yield* QuoteJournal.make.pipe(Effect.provideService(KeyValueStore.KeyValueStore, counting))
      yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => entry(i)), journal.record, {
        concurrency: "unbounded"
      })
      expect((yield* journal.entries).length).toBe(100)
      expect(writes).toBeGreaterThanOrEqual(1)
      expect(writes).toBeLessThan(100)
      const reopened = yield* QuoteJournal.make.pipe(Effect.provideService(KeyValueStore.KeyValueStore, counting))
      expect((yield* reopened.entries).length).toBe(100)
    }).pipe(Effect.provide(KeyValueStore.layerMemory)))

  it.effect("the no-op journal records nothing", () =>
    Effect.gen(function*() {
      expect(yield* roundTrip).toEqual([])
    }).pipe(Effect.provide(QuoteJournal.layerNoop)))

  it.effect("layers compose without a store for the memory journal", () =>
    Effect.gen(function*() {
      const journal = yield* QuoteJournal.QuoteJournal
      yield* journal.record(entry(7))
      expect((yield* journal.entries).length).toBe(1)
    }).pipe(Effect.provide(Layer.fresh(QuoteJournal.layerMemory))))
})
