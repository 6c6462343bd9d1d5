/**
 * The event log (`EventLog`): written by the node that runs each quote, read and followed by any node.
 * Embedded on SQLite in a temporary file and on a throwaway PostgreSQL (runner + client-only node), over
 * a real sandbox: seqs contiguous from 1, one terminal event and nothing after it, no card data in a row,
 * and a runner restarted mid-quote leaves no gap.
 */
import { expect, layer } from "@effect/vitest"
import { QuoteEvent } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Context, Effect, Exit, Layer, Schedule, Scope, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { CardCipher, ClusterSecurity, DurableQuotes, EventLog } from "../src/index.js"
import * as Runner from "../src/Runner.js"
import { card, dataKey, dumpTables, quotesLayer, sandbox, tempDatabase } from "./fixtures.js"
import { runnerNode } from "./fixtures/runner.js"
import * as TestPg from "./utils/postgres.js"

/** A card that takes several polls, with a sentinel PIN to look for. */
const slowCard = () => card(TestData.Cards.slow, `PIN-SENTINEL-${randomBytes(4).toString("hex")}`)

/** Polls every 100 ms whatever the service's hint: several progress events per quote. */
const track = { schedule: Schedule.spaced("100 millis") }

/** The card data that must appear in no row of the log: the number, the PIN, the masked number. */
const cardStrings = (input: ReturnType<typeof slowCard>) => [input.cardNumber, input.pinNumber, "****0068"]

/** No card data in the database: neither number nor PIN anywhere, not even masked in the event log. */
const expectNoCardData = (input: ReturnType<typeof slowCard>) =>
  Effect.gen(function*() {
    const { text } = yield* dumpTables
    const sql = yield* SqlClient.SqlClient
    const events = JSON.stringify(yield* sql.unsafe(`SELECT * FROM ${EventLog.table}`))
    expect(events).toContain("Submitted")
    for (const secret of cardStrings(input)) expect(events).not.toContain(secret)
    expect(text).not.toContain(input.cardNumber)
    expect(text).not.toContain(input.pinNumber)
  })

/** Asserts a quote's log: seqs 1..n, `Submitted` once and first, one terminal event, last. */
export const expectWholeLog = (entries: ReadonlyArray<EventLog.Entry>) => {
  expect(entries.map((entry) => entry.seq)).toEqual(entries.map((_, index) => index + 1))
  expect(entries[0]?.event._tag).toBe("Submitted")
  expect(entries.filter((entry) => entry.event._tag === "Submitted")).toHaveLength(1)
  expect(entries.filter((entry) => QuoteEvent.isTerminal(entry.event))).toHaveLength(1)
  expect(QuoteEvent.isTerminal(entries[entries.length - 1]!.event)).toBe(true)
}

/** Entries as the table keeps them (equal events may differ in what they cached, a `BigDecimal`'s normal form). */
const encoded = (entries: ReadonlyArray<EventLog.Entry>) =>
  entries.map((entry) => ({ seq: entry.seq, event: QuoteEvent.encode(entry.event) }))

const followAll = (requestId: string, afterSeq = 0) =>
  Effect.flatMap(
    EventLog.EventLog,
    (log) => log.follow(requestId, afterSeq).pipe(Stream.runCollect, Effect.timeout("20 seconds"))
  )

layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("EventLog embedded (SQLite)", (it) => {
  it.effect("follow streams a quote's events live, in order, from seq 1, card-free, and ends after the terminal one", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const input = slowCard()
      yield* Effect.gen(function*() {
        const durable = yield* DurableQuotes.DurableQuotes
        const requestId = yield* durable.submit(input)
        const followed = yield* followAll(requestId)
        expectWholeLog(followed)
        expect(followed.length).toBeGreaterThan(3) // several polls: progress between Submitted and the outcome
        expect(followed[followed.length - 1]!.event._tag).toBe("Completed")
        expect(followed[0]!.event).not.toHaveProperty("card")
        const log = yield* EventLog.EventLog
        // read gives the same (what the writer handed over is what the table holds); a follow after the
        // terminal ends at once; one after seq 2 gives the rest
        expect(encoded(yield* log.read(requestId, 0))).toEqual(encoded(followed))
        expect(yield* followAll(requestId, followed.length)).toEqual([])
        expect(encoded(yield* followAll(requestId, 2))).toEqual(encoded(followed.slice(2)))
        yield* expectNoCardData(input)
      }).pipe(
        Effect.provide(EventLog.layer()),
        Effect.provide(quotesLayer(server, yield* tempDatabase, { track }), { local: true })
      )
    }).pipe(Effect.scoped))

  it.effect("a runner stopped mid-quote and started again on the same file leaves a log without gap or repeat", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const database = yield* tempDatabase
      const input = slowCard()
      // a stop that waits for no quote in flight (the default waits 3 s, time enough for this one to end)
      const node = () =>
        EventLog.layer().pipe(
          Layer.provideMerge(quotesLayer(server, database, { sharding: { entityTerminationTimeout: 0 }, track })),
          Layer.fresh
        )
      // first run: submit, see the quote's first two events recorded, stop the process's layers
      const first = yield* Scope.make()
      const context = yield* Layer.buildWithScope(node(), first)
      const requestId = yield* Context.get(context, DurableQuotes.DurableQuotes).submit(input)
      const early = yield* Context.get(context, EventLog.EventLog).follow(requestId, 0).pipe(
        Stream.take(2),
        Stream.runCollect,
        Effect.timeout("20 seconds")
      )
      yield* Scope.close(first, Exit.void)
      expect(early.map((entry) => entry.seq)).toEqual([1, 2])
      // second run on the same file: the quote resumes, its events go on from where they stopped
      yield* Effect.gen(function*() {
        const quote = yield* Effect.flatMap(DurableQuotes.DurableQuotes, (durable) => durable.result(requestId))
        const entries = yield* followAll(requestId)
        expectWholeLog(entries)
        const last = entries[entries.length - 1]!.event
        expect(last._tag === "Completed" && last.quote.transactionId).toBe(quote.transactionId)
        // the resumed run's progress is recorded too (its bus names the transaction only): every step's completion
        const progress = entries.flatMap((entry) => entry.event._tag === "Progress" ? [entry.event] : [])
        const steps = progress[progress.length - 1]!.steps.map((step) => step.descriptionTag)
        const completions = entries.flatMap((entry) =>
          entry.event._tag === "StepCompleted" ? [entry.event.descriptionTag] : []
        )
        expect(new Set(completions)).toEqual(new Set(steps))
        yield* expectNoCardData(input)
      }).pipe(Effect.provide(node(), { local: true }))
    }).pipe(Effect.scoped))

  it.effect("the node's own writer wakes its streams at each commit, without waiting for the poll", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* Effect.gen(function*() {
        const durable = yield* DurableQuotes.DurableQuotes
        const requestId = yield* durable.submit(slowCard())
        // the poll runs once at the start, then not within the test: every event after it comes from the writer's wake-ups
        const followed = yield* followAll(requestId)
        expectWholeLog(followed)
        expect(followed.length).toBeGreaterThan(3)
      }).pipe(
        Effect.provide(EventLog.layer({ pollInterval: "1 hour" })),
        Effect.provide(quotesLayer(server, yield* tempDatabase, { track }), { local: true })
      )
    }).pipe(Effect.scoped))

  it.effect("a quote the POST answers at once, and one refused, each end with their terminal event", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* Effect.gen(function*() {
        const durable = yield* DurableQuotes.DurableQuotes
        const instant = yield* durable.submit(card(TestData.Cards.instant))
        const invalid = yield* durable.submit(card(TestData.Cards.invalid))
        const instantLog = yield* followAll(instant)
        expectWholeLog(instantLog)
        expect(instantLog.map((entry) => entry.event._tag)).toEqual(["Submitted", "Completed"])
        const invalidLog = yield* followAll(invalid)
        expectWholeLog(invalidLog)
        const failed = invalidLog[invalidLog.length - 1]!.event
        expect(failed._tag === "Failed" && failed.error._tag).toBe("InvalidCard")
      }).pipe(
        Effect.provide(EventLog.layer()),
        Effect.provide(quotesLayer(server, yield* tempDatabase, { track }), { local: true })
      )
    }).pipe(Effect.scoped))
})

layer(Layer.merge(sandbox({ timeScale: 0.05 }), TestPg.layer()), { excludeTestServices: true, timeout: 120_000 })(
  "EventLog on PostgreSQL",
  (it) => {
    it.effect("a client-only node follows a quote a runner records, woken by NOTIFY: no gap, no repeat, ends", () =>
      Effect.gen(function*() {
        const db = yield* TestPg.PgTestDatabase
        const server = yield* Sandbox.SandboxServer
        yield* runnerNode(db, server)
        const client = yield* Layer.build(
          Layer.merge(DurableQuotes.layer(), EventLog.layer()).pipe(
            Layer.provideMerge(Runner.layerClient({ databaseUrl: db.url, security: ClusterSecurity.insecureLoopback })),
            Layer.provide(CardCipher.layer(dataKey))
          )
        )
        const input = slowCard()
        yield* Effect.gen(function*() {
          const requestId = yield* Effect.flatMap(DurableQuotes.DurableQuotes, (durable) => durable.submit(input))
          // two streams at once, one from the start and one resuming after seq 1, and one after the end
          const [whole, resumed] = yield* Effect.all([followAll(requestId), followAll(requestId, 1)], {
            concurrency: 2
          })
          expectWholeLog(whole)
          expect(whole.length).toBeGreaterThan(3)
          expect(resumed).toEqual(whole.slice(1))
          expect(yield* followAll(requestId, whole.length)).toEqual([])
          const rows = yield* Effect.flatMap(EventLog.EventLog, (log) => log.read(requestId, 0))
          const text = JSON.stringify(rows.map((entry) => QuoteEvent.encode(entry.event)))
          for (const secret of cardStrings(input)) expect(text).not.toContain(secret)
        }).pipe(Effect.provide(client))
      }).pipe(Effect.scoped))
  }
)
