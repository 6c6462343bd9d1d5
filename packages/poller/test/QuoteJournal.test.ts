import * as KeyValueStore from "@effect/platform/KeyValueStore"
import { describe, expect, it } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { QuoteJournal } from "../src/index.js"

const entry = (n: number) =>
  new QuoteJournal.JournalEntry({
    transactionId: `TX${n}`,
    requestId: `req${n}`,
    submittedAt: DateTime.unsafeMake(1_700_000_000_000 + n),
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

  it.effect("keeps the previous index when the newest index write was torn", () =>
    Effect.gen(function*() {
      const store = yield* KeyValueStore.KeyValueStore
      const first = yield* QuoteJournal.make
      yield* first.record(entry(1))
      yield* first.record(entry(2))
      // Simulate a crash in the middle of writing the newest index copy.
      const keys = ["index-a", "index-b"]
      const contents = yield* Effect.forEach(keys, (key) => store.get(key))
      const newest = contents[0]!._tag === "Some" && contents[0]!.value.includes("TX2") ? "index-a" : "index-b"
      yield* store.set(newest, "{\"sequence\": 9, \"ids\": [\"TX")
      const reopened = yield* QuoteJournal.make
      expect((yield* reopened.entries).map((e) => e.transactionId)).toEqual(["TX1"])
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
