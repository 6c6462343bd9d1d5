/**
 * The event log's cursor (`EventLog.Cursor`) on a real SQLite file: it uses the entries this
 * process's writer hands over when they follow what it has, and reads the table otherwise (a gap, a
 * wake-up from elsewhere, its first poll). The entries handed over here are not in the table, so a
 * cursor that returns them did not read it, and one that returns the table's did.
 */
import { describe, expect, it } from "@effect/vitest"
import { Errors, QuoteEvent } from "@gcx/core"
import { DateTime, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Embedded from "../src/Embedded.js"
import * as EventLog from "../src/EventLog.js"
import * as Commits from "../src/internal/events/commits.js"
import * as Table from "../src/internal/events/table.js"
import { tempDatabase } from "./fixtures.js"

const timestamp = DateTime.makeUnsafe(Date.UTC(2026, 10, 29))

const progress = (percentComplete: number) =>
  new QuoteEvent.Progress({ transactionId: "T1", timestamp, percentComplete, steps: [] })

const entry = (seq: number): EventLog.Entry => ({ seq, event: progress(seq) })

const seqs = (entries: ReadonlyArray<EventLog.Entry> | undefined) => entries?.map((each) => each.seq)

/** The log over a fresh SQLite file, polled every 20 ms; with the `SqlClient` its writer's commits are told on. */
const withLog = <A, E>(
  body: (log: EventLog.Service, sql: SqlClient.SqlClient) => Effect.Effect<A, E, SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const file = yield* tempDatabase
    return yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const log = yield* EventLog.make({ pollInterval: "20 millis" })
      return yield* body(log, sql)
    }).pipe(Effect.provide(Layer.orDie(Embedded.layerSqlite(file))))
  }).pipe(Effect.scoped)

describe("EventLog's cursor", () => {
  it.live("takes what the writer hands over when it follows, without reading; reads after a gap", () =>
    withLog((log, sql) =>
      Effect.gen(function*() {
        const cursor = yield* log.cursor("Q1", 0)
        // the first poll reads the table: empty
        expect(yield* cursor.poll).toEqual([])
        // nothing woke it since: nothing new, and no read
        expect(yield* cursor.poll).toEqual([])
        // a waiting next is woken by the hand-over, and takes its entries as they are
        const waiting = yield* Effect.forkChild(cursor.next)
        yield* Effect.yieldNow
        Commits.committed(sql, new Map([["Q1", [entry(1), entry(2)]], ["Q2", [entry(1)]]]))
        expect(seqs(yield* Fiber.join(waiting))).toEqual([1, 2])
        // entries it has, again: nothing new
        Commits.committed(sql, new Map([["Q1", [entry(2)]]]))
        expect(yield* cursor.poll).toEqual([])
        // a gap (4 after 2): it reads the table instead, which has rows 3 and 4 now
        yield* Table.insert(sql, "Q1", progress(1), 0)
        yield* Table.insert(sql, "Q1", progress(2), 0)
        yield* Table.insert(sql, "Q1", progress(3), 0)
        yield* Table.insert(sql, "Q1", progress(4), 0)
        Commits.committed(sql, new Map([["Q1", [entry(4)]]]))
        const read = yield* cursor.poll
        expect(seqs(read)).toEqual([3, 4])
        expect(read?.map((each) => each.event._tag === "Progress" && each.event.percentComplete)).toEqual([3, 4])
      }).pipe(Effect.scoped)
    ))

  it.live("reads when woken by anything but a hand-over (the poll of rows another writer added)", () =>
    withLog((log, sql) =>
      Effect.gen(function*() {
        const cursor = yield* log.cursor("Q1", 0)
        expect(yield* cursor.poll).toEqual([])
        const waiting = yield* Effect.forkChild(cursor.next)
        // a row no hand-over told of: the poll finds it and wakes the cursor, which reads it
        yield* Table.insert(sql, "Q1", progress(7), 0)
        const entries = yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))
        expect(seqs(entries)).toEqual([1])
        // a second cursor handed seq 2 takes it once; the poll's finding of the same row repeats nothing
        const second = yield* log.cursor("Q1", 1)
        expect(yield* second.poll).toEqual([])
        yield* Table.insert(sql, "Q1", progress(8), 0)
        Commits.committed(sql, new Map([["Q1", [{ seq: 2, event: progress(8) }]]]))
        expect(seqs(yield* second.poll)).toEqual([2])
        yield* Effect.sleep("100 millis")
        expect(yield* second.poll).toEqual([])
      }).pipe(Effect.scoped)
    ))

  it.live("reads after the keep-alive's wake, and again after a read that failed: nothing is lost", () =>
    withLog((log, sql) =>
      Effect.gen(function*() {
        const cursor = yield* log.cursor("Q1", 0)
        expect(yield* cursor.poll).toEqual([])
        // a row no wake-up told of (a NOTIFY lost): the keep-alive's wake makes the next poll read it
        yield* Table.insert(sql, "Q1", progress(1), 0)
        cursor.wake()
        // the read fails (the table is away for a moment); the poll after it reads again
        yield* sql.unsafe(`ALTER TABLE ${Table.table} RENAME TO away`)
        const failed = yield* Effect.flip(cursor.poll)
        expect(failed._tag).toBe("SqlError")
        yield* sql.unsafe(`ALTER TABLE away RENAME TO ${Table.table}`)
        expect(seqs(yield* cursor.poll)).toEqual([1])
        // then, with nothing new, no read is needed
        expect(yield* cursor.poll).toEqual([])
      }).pipe(Effect.scoped)
    ))

  it.live("a hand-over with a gap further on is read whole from the table", () =>
    withLog((log, sql) =>
      Effect.gen(function*() {
        const cursor = yield* log.cursor("Q1", 0)
        expect(yield* cursor.poll).toEqual([])
        for (const seq of [1, 2, 3, 4]) yield* Table.insert(sql, "Q1", progress(seq), 0)
        Commits.committed(sql, new Map([["Q1", [entry(1), entry(2), entry(4)]]]))
        expect(seqs(yield* cursor.poll)).toEqual([1, 2, 3, 4])
      }).pipe(Effect.scoped)
    ))

  it.live("a cursor resumed past the quote's last event ends when the quote ends, handed over or read", () =>
    withLog((log, sql) =>
      Effect.gen(function*() {
        const failed = new QuoteEvent.Failed({
          transactionId: "T1",
          timestamp,
          error: Errors.unexpectedResponse({ transactionId: "T1" }, "the test's failure")
        })
        // Last-Event-ID 3 while the quote has one event: nothing yet, and not ended
        yield* Table.insert(sql, "Q1", progress(1), 0)
        const handedOver = yield* log.cursor("Q1", 3)
        expect(yield* handedOver.poll).toEqual([])
        // its terminal event is 2, at or before the cursor: handed over, it ends the cursor
        yield* Table.insert(sql, "Q1", failed, 0)
        Commits.committed(sql, new Map([["Q1", [{ seq: 2, event: failed }]]]))
        expect(yield* handedOver.next).toBeUndefined()
        // read (a cursor woken by anything else), the same
        yield* Table.insert(sql, "Q2", progress(1), 0)
        const read = yield* log.cursor("Q2", 3)
        expect(yield* read.poll).toEqual([])
        const waiting = yield* Effect.forkChild(read.next)
        yield* Table.insert(sql, "Q2", failed, 0)
        expect(yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))).toBeUndefined()
      }).pipe(Effect.scoped)
    ))

  it.live("a terminal event handed over ends the cursor", () =>
    withLog((log, sql) =>
      Effect.gen(function*() {
        const cursor = yield* log.cursor("Q1", 0)
        expect(yield* cursor.poll).toEqual([])
        const failed = new QuoteEvent.Failed({
          transactionId: "T1",
          timestamp,
          error: Errors.unexpectedResponse({ transactionId: "T1" }, "the test's failure")
        })
        Commits.committed(sql, new Map([["Q1", [entry(1), { seq: 2, event: failed }, entry(3)]]]))
        expect(seqs(yield* cursor.next)).toEqual([1, 2])
        expect(yield* cursor.next).toBeUndefined()
        expect(yield* cursor.poll).toBeUndefined()
      }).pipe(Effect.scoped)
    ))
})
