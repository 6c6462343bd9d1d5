/**
 * The embedded store's SQL client on `node:sqlite`, on real files in a
 * temporary directory: statements and parameters, transactions (nested ones
 * as savepoints), one connection used by one fiber at a time, WAL and the
 * other settings, the prepared-statement cache, typed errors, and the
 * database closed with its scope.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Option } from "effect"
import {
  MessageStorage,
  Runner,
  RunnerAddress,
  RunnerStorage,
  ShardId,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { Digest } from "effect/crypto"
import { Reactivity } from "effect/reactivity"
import { SqlClient, SqlError, Statement } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { DatabaseSync } from "node:sqlite"
import * as Compiler from "../src/internal/sqlite/compiler.js"
import * as SqliteClient from "../src/internal/sqlite/SqliteClient.js"
import * as StatementCache from "../src/internal/sqlite/StatementCache.js"

/** A fresh database file in a fresh temporary folder (removed when the test's scope ends). */
const tempFile = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-sqlite-"))),
  (folder) => Effect.sync(() => Fs.rmSync(folder, { recursive: true, force: true }))
).pipe(Effect.map((folder) => Path.join(folder, "test.db")))

/** A client on a fresh file, open for the test's scope. */
const client = (options: Omit<SqliteClient.SqliteClientConfig, "filename"> = {}) =>
  Effect.flatMap(tempFile, (filename) => open({ ...options, filename }))

const open = (options: SqliteClient.SqliteClientConfig) =>
  SqliteClient.make(options).pipe(Effect.provide(Reactivity.layer))

/** The reason of a `SqlError` the effect fails with. */
const failureReason = <A, R>(effect: Effect.Effect<A, SqlError.SqlError, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.isTrue(SqlError.isSqlError(error))
    return error.reason
  })

describe("SqliteClient", () => {
  describe("statements", () => {
    it.effect("binds parameters and reads rows back", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, flag INTEGER, data BLOB, note TEXT)`
        const data = new Uint8Array([1, 2, 3])
        yield* sql`INSERT INTO items ${sql.insert({ name: "card", price: 12.5, flag: true, data, note: null })}`
        yield* sql`INSERT INTO items ${sql.insert([{ name: "it's", price: 1, flag: false, data, note: undefined }])}`
        const rows = yield* sql<
          { id: number; name: string; price: number; flag: number; data: Uint8Array; note: string | null }
        >`SELECT * FROM items WHERE ${sql.in("name", ["card", "it's"])} ORDER BY id`
        expect(rows.map((row) => ({ ...row, data: Array.from(row.data) }))).toEqual([
          { id: 1, name: "card", price: 12.5, flag: 1, data: [1, 2, 3], note: null },
          { id: 2, name: "it's", price: 1, flag: 0, data: [1, 2, 3], note: null }
        ])
        const table = "items"
        const [{ n }] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ${sql(table)} WHERE price > ${2}`
        expect(n).toBe(1)
        expect(yield* sql.unsafe<{ name: string }>("SELECT name FROM items WHERE id = ?", [2])).toEqual([
          { name: "it's" }
        ])
      }))

    it.effect("raw results, value arrays, unprepared statements, safe integers and name transforms", () =>
      Effect.gen(function*() {
        const sql = yield* client({ transformResultNames: (name) => name.replace(/_(\w)/g, (_, c) => c.toUpperCase()) })
        yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, big_value INTEGER)`
        const raw = yield* sql`INSERT INTO t (big_value) VALUES (${42})`.raw
        expect(raw).toEqual({ changes: 1, lastInsertRowid: 1 })
        expect(yield* sql`SELECT id, big_value FROM t`.values).toEqual([[1, 42]])
        expect(yield* sql`SELECT id, big_value FROM t`.valuesUnprepared).toEqual([[1, 42]])
        // the cached statement went back to objects after `.values`
        expect(yield* sql`SELECT id, big_value FROM t`).toEqual([{ id: 1, bigValue: 42 }])
        expect(yield* sql`SELECT id, big_value FROM t`.withoutTransform).toEqual([{ id: 1, big_value: 42 }])
        expect(yield* sql`SELECT id FROM t`.unprepared).toEqual([{ id: 1 }])
        // an integer beyond 2^53 is read as a bigint under SafeIntegers, and fails (never rounded) without
        yield* sql`UPDATE t SET big_value = ${9007199254740993n}`
        const exact = yield* sql`SELECT big_value FROM t`.pipe(Effect.provideService(SqlClient.SafeIntegers, true))
        expect(exact).toEqual([{ bigValue: 9007199254740993n }])
        const tooLarge = yield* failureReason(sql`SELECT big_value FROM t`)
        expect(tooLarge.message).toMatch(/too large/)
        expect(sql.driver).toBe("sqlite-node")
        expect(sql.onDialectOrElse({ sqlite: () => "sqlite", orElse: () => "other" })).toBe("sqlite")
      }))

    it.effect("the SqliteClient and SqlClient services of the layer are the same client", () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        const [sql, sqlite] = yield* Effect.all([
          Effect.service(SqlClient.SqlClient),
          Effect.service(SqliteClient.SqliteClient)
        ])
          .pipe(Effect.provide(SqliteClient.layer({ filename })))
        expect(sql).toBe(sqlite)
        expect(sqlite.config.filename).toBe(filename)
      }))
  })

  describe("transactions", () => {
    it.effect("commit, and roll back on failure", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE t (v TEXT)`
        yield* sql.withTransaction(Effect.andThen(sql`INSERT INTO t VALUES ('committed')`, sql`SELECT 1`))
        const failed = yield* sql.withTransaction(
          Effect.andThen(sql`INSERT INTO t VALUES ('rolled back')`, Effect.fail("boom" as const))
        ).pipe(Effect.flip)
        expect(failed).toBe("boom")
        const died = yield* sql.withTransaction(Effect.andThen(sql`INSERT INTO t VALUES ('died')`, Effect.die("x")))
          .pipe(Effect.exit)
        expect(Exit.hasDies(died)).toBe(true)
        expect(yield* sql`SELECT v FROM t`).toEqual([{ v: "committed" }])
      }))

    it.effect("nested transactions are savepoints: an inner failure rolls back the inner part only", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE t (v TEXT)`
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t VALUES ('outer')`
          yield* sql.withTransaction(sql`INSERT INTO t VALUES ('inner kept')`)
          const inner = yield* sql.withTransaction(
            Effect.andThen(sql`INSERT INTO t VALUES ('inner dropped')`, Effect.fail("inner" as const))
          ).pipe(Effect.flip)
          expect(inner).toBe("inner")
          // a savepoint twice at the same depth, then deeper
          yield* sql.withTransaction(sql.withTransaction(sql`INSERT INTO t VALUES ('deep')`))
        }))
        expect((yield* sql`SELECT v FROM t ORDER BY rowid`).map((row) => row.v)).toEqual([
          "outer",
          "inner kept",
          "deep"
        ])
        // an outer failure drops what committed savepoints wrote
        yield* sql.withTransaction(
          Effect.andThen(sql.withTransaction(sql`INSERT INTO t VALUES ('lost')`), Effect.fail("outer"))
        ).pipe(Effect.ignore)
        expect(yield* sql`SELECT count(*) AS n FROM t`).toEqual([{ n: 3 }])
      }))

    it.effect("a transaction takes the write lock at BEGIN (BEGIN IMMEDIATE), before it writes", () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        const sql = yield* open({ filename })
        yield* sql`CREATE TABLE t (v TEXT)`
        const other = new DatabaseSync(filename, { timeout: 0 })
        yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
        const otherWrites = () => {
          try {
            other.exec("INSERT INTO t VALUES ('other')")
            return "written"
          } catch (error) {
            return (error as Error).message
          }
        }
        const during = yield* sql.withTransaction(Effect.andThen(sql`SELECT count(*) FROM t`, Effect.sync(otherWrites)))
        expect(during).toMatch(/locked|busy/i)
        expect(otherWrites()).toBe("written")
      }))

    it.effect("a failed COMMIT is rolled back and the connection stays usable", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`PRAGMA foreign_keys = ON`
        yield* sql`CREATE TABLE parent (id INTEGER PRIMARY KEY)`
        yield* sql`CREATE TABLE child (parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)`
        const reason = yield* failureReason(sql.withTransaction(sql`INSERT INTO child VALUES (42)`))
        expect(reason._tag).toBe("ConstraintError")
        expect(reason.operation).toBe("execute")
        expect(yield* sql`SELECT count(*) AS n FROM child`).toEqual([{ n: 0 }])
        yield* sql.withTransaction(sql`INSERT INTO parent VALUES (1)`)
        expect(yield* sql`SELECT id FROM parent`).toEqual([{ id: 1 }])
      }))
  })

  describe("one connection, one fiber at a time", () => {
    it.live("concurrent transactions do not interleave: no lost update", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE counter (n INTEGER)`
        yield* sql`INSERT INTO counter VALUES (0)`
        const increment = sql.withTransaction(Effect.gen(function*() {
          const [{ n }] = yield* sql<{ n: number }>`SELECT n FROM counter`
          yield* Effect.sleep("1 millis")
          yield* sql`UPDATE counter SET n = ${n + 1}`
        }))
        yield* Effect.all(Array.from({ length: 20 }, () => increment), { concurrency: "unbounded" })
        expect(yield* sql`SELECT n FROM counter`).toEqual([{ n: 20 }])
      }))

    it.live("a statement from another fiber waits for the transaction in progress", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE log (v TEXT)`
        const started = yield* Deferred.make<void>()
        const transaction = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO log VALUES ('tx 1')`
          yield* Deferred.succeed(started, undefined)
          yield* Effect.sleep("50 millis")
          yield* sql`INSERT INTO log VALUES ('tx 2')`
        })).pipe(Effect.forkChild({ startImmediately: true }))
        yield* Deferred.await(started)
        const outside = yield* sql`INSERT INTO log VALUES ('outside')`.pipe(
          Effect.forkChild({ startImmediately: true })
        )
        // and a reserved connection (held by its scope) waits as well
        const reserved = yield* Effect.scoped(
          Effect.flatMap(sql.reserve, (conn) => conn.execute("INSERT INTO log VALUES ('reserved')", [], undefined))
        ).pipe(Effect.forkChild({ startImmediately: true }))
        yield* Fiber.join(transaction)
        yield* Fiber.join(outside)
        yield* Fiber.join(reserved)
        const order = (yield* sql<{ v: string }>`SELECT v FROM log ORDER BY rowid`).map((row) => row.v)
        expect(order.slice(0, 2)).toEqual(["tx 1", "tx 2"])
        expect([...order.slice(2)].sort()).toEqual(["outside", "reserved"])
      }))

    it.live("an interrupted transaction rolls back and frees the connection", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE t (v TEXT)`
        const started = yield* Deferred.make<void>()
        const fiber = yield* sql.withTransaction(
          sql`INSERT INTO t VALUES ('interrupted')`.pipe(
            Effect.andThen(Deferred.succeed(started, undefined)),
            Effect.andThen(Effect.never)
          )
        ).pipe(Effect.forkChild({ startImmediately: true }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        expect(yield* sql`SELECT count(*) AS n FROM t`).toEqual([{ n: 0 }])
        yield* sql.withTransaction(sql`INSERT INTO t VALUES ('next')`)
        expect(yield* sql`SELECT v FROM t`).toEqual([{ v: "next" }])
      }))
  })

  describe("settings", () => {
    it.effect("WAL mode by default, the -wal file beside the database, a 5 s busy timeout", () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        const sql = yield* open({ filename })
        yield* sql`CREATE TABLE t (v TEXT)`
        yield* sql`INSERT INTO t VALUES ('x')`
        expect(yield* sql`PRAGMA journal_mode`).toEqual([{ journal_mode: "wal" }])
        expect(yield* sql`PRAGMA busy_timeout`).toEqual([{ timeout: 5000 }])
        expect(Fs.existsSync(`${filename}-wal`)).toBe(true)
        expect(Fs.existsSync(`${filename}-shm`)).toBe(true)
      }))

    it.effect("disableWAL, synchronous, busyTimeout", () =>
      Effect.gen(function*() {
        const rollbackJournal = yield* client({ disableWAL: true, synchronous: "FULL", busyTimeout: "250 millis" })
        expect(yield* rollbackJournal`PRAGMA journal_mode`).toEqual([{ journal_mode: "delete" }])
        expect(yield* rollbackJournal`PRAGMA synchronous`).toEqual([{ synchronous: 2 }])
        expect(yield* rollbackJournal`PRAGMA busy_timeout`).toEqual([{ timeout: 250 }])
        const normal = yield* client({ synchronous: "NORMAL" })
        expect(yield* normal`PRAGMA journal_mode`).toEqual([{ journal_mode: "wal" }])
        expect(yield* normal`PRAGMA synchronous`).toEqual([{ synchronous: 1 }])
      }))

    it.effect("an exclusive lock: a second client on the file fails typed; the lock goes with the first", () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        const first = yield* Effect.scoped(Effect.gen(function*() {
          const sql = yield* open({ filename, lockingMode: "EXCLUSIVE" })
          expect(yield* sql`PRAGMA locking_mode`).toEqual([{ locking_mode: "exclusive" }])
          expect(yield* sql`PRAGMA journal_mode`).toEqual([{ journal_mode: "wal" }])
          const second = yield* failureReason(
            Effect.scoped(open({ filename, lockingMode: "EXCLUSIVE", busyTimeout: "100 millis" }))
          )
          expect(second._tag).toBe("LockTimeoutError")
          expect(second.operation).toBe("open")
          expect(second.message).toMatch(/locked/)
          expect(second.isRetryable).toBe(true)
          return "closed"
        }))
        expect(first).toBe("closed")
        const again = yield* open({ filename, lockingMode: "EXCLUSIVE", busyTimeout: "100 millis" })
        expect(yield* again`SELECT 1 AS one`).toEqual([{ one: 1 }])
      }))

    it.effect("read-only", () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        yield* Effect.scoped(Effect.flatMap(open({ filename }), (sql) => sql`CREATE TABLE t (v TEXT)`))
        const sql = yield* open({ filename, readonly: true })
        expect(yield* sql.withTransaction(sql`SELECT count(*) AS n FROM t`)).toEqual([{ n: 0 }])
        const reason = yield* failureReason(sql`INSERT INTO t VALUES ('x')`)
        expect(reason.message).toMatch(/readonly/)
      }))
  })

  describe("prepared statements", () => {
    it.effect("a statement is prepared once and reused", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE t (v INTEGER)`
        const before = yield* sql.statementCacheStats
        for (let i = 0; i < 10; i++) yield* sql`INSERT INTO t VALUES (${i})`
        const after = yield* sql.statementCacheStats
        expect(after.misses - before.misses).toBe(1)
        expect(after.hits - before.hits).toBe(9)
        expect(after.capacity).toBe(200)
        // an unprepared statement leaves the cache alone
        yield* sql`SELECT count(*) FROM t`.unprepared
        expect(yield* sql.statementCacheStats).toEqual(after)
      }))

    it.effect("unprepared statements are kept in a small cache of their own, which they alone fill", () =>
      Effect.gen(function*() {
        const sql = yield* client({ prepareCacheSize: 2 })
        yield* sql`CREATE TABLE t (v INTEGER)`
        const prepared = yield* sql.statementCacheStats
        // as effect/cluster marks an update it runs twice per message
        for (let i = 0; i < 10; i++) yield* sql`INSERT INTO t VALUES (${i})`.unprepared
        expect(yield* sql.unpreparedCacheStats).toMatchObject({ capacity: 32, size: 1, misses: 1, hits: 9 })
        expect(yield* sql`SELECT count(*) AS n FROM t`.unprepared).toEqual([{ n: 10 }])
        // texts made once (ids written into the SQL) churn through it and leave the prepared ones alone
        for (let i = 0; i < 40; i++) yield* sql.unsafe(`UPDATE t SET v = v WHERE v IN (${i}, ${i + 1})`).unprepared
        expect(yield* sql.unpreparedCacheStats).toMatchObject({ size: 32, evictions: 10 })
        expect(yield* sql.statementCacheStats).toEqual(prepared)
        expect(yield* sql`SELECT count(*) AS n FROM t WHERE v < ${5}`.unprepared).toEqual([{ n: 5 }])
      }))

    it.effect("integer literals are bound: a text with ids and a time written in is prepared once per shape", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE m (id INTEGER PRIMARY KEY, deliver_at INTEGER, note TEXT)`
        const big = 252432006969544704n // past 2^53, as the cluster's ids
        yield* sql`INSERT INTO m VALUES (${big}, ${100n}, 'a'), (${big + 1n}, ${200n}, 'b'), (${
          big + 2n
        }, ${300n}, 'c')`
        const before = yield* sql.unpreparedCacheStats
        // as effect/cluster's storage polls: a time and an id list written into the text as literals
        const poll = (now: number, ids: ReadonlyArray<bigint>) =>
          sql<{ id: bigint }>`SELECT id FROM m WHERE deliver_at <= ${sql.literal(String(now))} AND id IN (${
            sql.literal(ids.join(","))
          }) ORDER BY id`.unprepared.pipe(Effect.provideService(SqlClient.SafeIntegers, true))
        for (let now = 150; now < 160; now++) {
          expect(yield* poll(now, [big, big + 1n])).toEqual([{ id: big }])
        }
        expect(yield* poll(1_000, [big, big + 1n, big + 2n])).toEqual([{ id: big }, { id: big + 1n }, { id: big + 2n }])
        // eleven polls, two shapes (two ids, three ids): two statements prepared
        expect(yield* sql.unpreparedCacheStats).toMatchObject({ misses: before.misses + 2, hits: before.hits + 9 })
        // the values are bound as the text read: a compile shows the placeholders and the bigints
        const [text, params] = sql`UPDATE m SET deliver_at = ${sql.literal("7")} WHERE id IN (${sql.literal("1, 2")})`
          .compile()
        expect(text).toBe("UPDATE m SET deliver_at = ? WHERE id IN (?,?)")
        expect(params).toEqual([7n, 1n, 2n])
      }))

    it.effect("a literal is bound only where a value stands: elsewhere it is written as it is", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        const lit = (value: string) => sql.literal(value)
        const written = (statement: { compile: () => readonly [string, ReadonlyArray<unknown>] }) => {
          const [text, params] = statement.compile()
          expect(params).toEqual([])
          return text
        }
        yield* sql`CREATE TABLE t (a INTEGER, b TEXT)`
        yield* sql`INSERT INTO t VALUES (2, 'x'), (1, 'y'), (3, 'x')`
        // positions where a parameter would mean something else, or is not allowed
        expect(written(sql`SELECT a FROM t ORDER BY ${lit("1")}`)).toBe("SELECT a FROM t ORDER BY 1")
        expect(yield* sql<{ a: number }>`SELECT a FROM t ORDER BY ${lit("1")}`).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }])
        expect(yield* sql`SELECT b, count(*) AS n FROM t GROUP BY ${lit("1")} ORDER BY b`).toEqual([
          { b: "x", n: 2 },
          { b: "y", n: 1 }
        ])
        expect(yield* sql`SELECT ${lit("1")} FROM t LIMIT 1`).toEqual([{ "1": 1 }])
        expect(written(sql`CREATE TABLE u (c VARCHAR(${lit("64")}) DEFAULT ${lit("0")})`)).toContain("VARCHAR(64)")
        yield* sql`CREATE TABLE u (c VARCHAR(${lit("64")}) DEFAULT ${lit("0")})`
        yield* sql`CREATE VIEW v AS SELECT a FROM t WHERE a > ${lit("1")}`
        yield* sql`CREATE INDEX t_partial ON t (a) WHERE a = ${lit("2")}`
        yield* sql`PRAGMA busy_timeout = ${lit("5000")}`
        expect(yield* sql`SELECT count(*) AS n FROM v`).toEqual([{ n: 2 }])
        // inside a string, a quoted name or a comment; glued to a number or a name
        expect(written(sql`SELECT 'a = ${lit("42")}' AS v`)).toBe("SELECT 'a = 42' AS v")
        expect(written(sql`SELECT "it's" AS q WHERE 'a = ${lit("5")}' <> ''`)).toContain("'a = 5'")
        expect(written(sql`SELECT 1 -- it's\n WHERE 'a = ${lit("5")}' <> ''`)).toContain("'a = 5'")
        expect(written(sql`SELECT 1 /* a = ${lit("5")} */`)).toBe("SELECT 1 /* a = 5 */")
        expect(written(sql`SELECT a FROM t WHERE a = ${lit("1")}${lit("0")}`)).toBe("SELECT a FROM t WHERE a = 10")
        expect(written(sql`SELECT a FROM t WHERE a = ${lit("1")}.5`)).toBe("SELECT a FROM t WHERE a = 1.5")
        // signed, too large, not only digits, a list after a comparison, a list too long
        expect(written(sql`SELECT a FROM t WHERE a = ${lit("-1")}`)).toBe("SELECT a FROM t WHERE a = -1")
        expect(written(sql`SELECT a FROM t WHERE a = ${lit("9223372036854775808")}`)).toContain("9223372036854775808")
        expect(written(sql`SELECT a FROM t ${lit("LIMIT 10")}`)).toBe("SELECT a FROM t LIMIT 10")
        expect(written(sql`SELECT a FROM t WHERE a = ${lit("1.5")}`)).toBe("SELECT a FROM t WHERE a = 1.5")
        expect(written(sql`SELECT a FROM t WHERE a = ${lit("1,2")}`)).toBe("SELECT a FROM t WHERE a = 1,2")
        const long = Array.from({ length: 1_001 }, (_, i) => i).join(",")
        expect(written(sql`SELECT a FROM t WHERE a IN (${lit(long)})`)).toContain("(0,1,2,")
        // a quoted string closed before the value, with a doubled quote in it, leaves the value bound
        expect(sql`SELECT 'it''s' AS s WHERE 1 = ${lit("1")}`.compile()).toEqual([
          "SELECT 'it''s' AS s WHERE 1 = ?",
          [1n]
        ])
        expect(yield* sql`SELECT 'it''s' AS s WHERE 1 = ${lit("1")}`).toEqual([{ s: "it's" }])
        // a literal that brings its own parameters keeps them
        const withParams = Statement.fragment([Statement.literal("SELECT "), Statement.literal("?", [3])])
        expect(Compiler.make().compile(withParams, false)).toEqual(["SELECT ?", [3]])
        // the compiler without name transforms binds the same way
        const [text, params] = Compiler.make((name) => name.toUpperCase()).withoutTransform.compile(
          Statement.fragment([
            Statement.literal("SELECT a FROM t WHERE a IN ("),
            Statement.literal("1,2"),
            Statement.literal(")")
          ]),
          true
        )
        expect([text, params]).toEqual(["SELECT a FROM t WHERE a IN (?,?)", [1n, 2n]])
      }))

    it.effect("the cache is bounded: least recently used statements are dropped", () =>
      Effect.gen(function*() {
        const sql = yield* client({ prepareCacheSize: 3 })
        for (let i = 0; i < 10; i++) yield* sql.unsafe(`SELECT ${i} AS v`)
        const stats = yield* sql.statementCacheStats
        expect(stats).toMatchObject({ size: 3, capacity: 3, misses: 10, evictions: 7 })
        yield* sql.unsafe("SELECT 9 AS v") // still cached
        yield* sql.unsafe("SELECT 0 AS v") // evicted: prepared again
        expect(yield* sql.statementCacheStats).toMatchObject({ size: 3, hits: stats.hits + 1, misses: 11 })
        expect(yield* sql.unsafe("SELECT 0 AS v")).toEqual([{ v: 0 }])
      }))

    it("StatementCache: LRU order, capacity 0, a failed prepare caches nothing", () => {
      const prepared: Array<string> = []
      const cache = StatementCache.make(2, (sql) => {
        if (sql === "bad") throw new Error("bad")
        prepared.push(sql)
        return { sql }
      })
      cache.get("a")
      cache.get("b")
      expect(cache.get("a")).toEqual({ sql: "a" }) // a is now the most recent
      cache.get("c") // evicts b
      cache.get("a")
      cache.get("b")
      expect(prepared).toEqual(["a", "b", "c", "b"])
      expect(() => cache.get("bad")).toThrow("bad")
      expect(cache.stats()).toEqual({ size: 2, capacity: 2, hits: 2, misses: 5, evictions: 2 })
      cache.clear()
      expect(cache.stats().size).toBe(0)
      const none = StatementCache.make(0, (sql) => ({ sql }))
      expect(none.get("a")).not.toBe(none.get("a"))
      expect(none.stats()).toEqual({ size: 0, capacity: 0, hits: 0, misses: 2, evictions: 0 })
    })
  })

  describe("errors", () => {
    it.effect("are SqlErrors with a typed reason, the operation and SQLite's message", () =>
      Effect.gen(function*() {
        const sql = yield* client()
        yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT UNIQUE, v TEXT NOT NULL)`
        yield* sql`INSERT INTO t (code, v) VALUES ('a', 'x')`

        const unique = yield* failureReason(sql`INSERT INTO t (code, v) VALUES ('a', 'y')`)
        assert.strictEqual(unique._tag, "UniqueViolation")
        if (unique._tag === "UniqueViolation") expect(unique.constraint).toBe("t.code")
        expect(unique.operation).toBe("execute")
        expect(unique.message).toBe("Failed to execute statement: UNIQUE constraint failed: t.code")
        expect(unique.isRetryable).toBe(false)

        const notNull = yield* failureReason(sql`INSERT INTO t (code) VALUES ('b')`)
        expect(notNull._tag).toBe("ConstraintError")

        const syntax = yield* failureReason(sql`SELEC * FROM t`)
        expect(syntax._tag).toBe("SqlSyntaxError")
        expect(syntax.operation).toBe("prepare")
        expect(syntax.message).toMatch(/syntax error/)

        const missingTable = yield* failureReason(sql`SELECT * FROM nowhere`)
        expect(missingTable._tag).toBe("UnknownError")
        expect(missingTable.message).toMatch(/no such table: nowhere/)

        const unbindable = yield* failureReason(sql.unsafe("SELECT ?", [{ not: "bindable" }]))
        expect(unbindable.operation).toBe("execute")

        const error = yield* Effect.flip(sql`SELECT * FROM nowhere`)
        expect(error._tag).toBe("SqlError")
        expect(error.message).toBe("Failed to prepare statement: no such table: nowhere")
        expect(error.cause).toBe(error.reason)
        // the failure left the connection usable
        expect(yield* sql`SELECT count(*) AS n FROM t`).toEqual([{ n: 1 }])
      }))

    it.effect("a database that cannot be opened: ConnectionError", () =>
      Effect.gen(function*() {
        const filename = yield* tempFile
        const reason = yield* failureReason(
          Effect.scoped(open({ filename: Path.join(Path.dirname(filename), "missing", "x.db") }))
        )
        expect(reason._tag).toBe("ConnectionError")
        expect(reason.operation).toBe("open")
        expect(reason.message).toMatch(/unable to open database file/)
        const layerExit = yield* Effect.exit(
          Layer.build(SqliteClient.layer({ filename: Path.join(Path.dirname(filename), "missing", "x.db") }))
        )
        const failure = Exit.isFailure(layerExit) ? Cause.findErrorOption(layerExit.cause) : Option.none()
        expect(Option.map(failure, (error) => error.reason._tag)).toEqual(Option.some("ConnectionError"))
      }))
  })

  it.effect("the database closes when its scope ends; using the client then fails with ConnectionError", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const sql = yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* open({ filename, lockingMode: "EXCLUSIVE" })
        yield* sql`CREATE TABLE t (v TEXT)`
        return sql
      }))
      const reason = yield* failureReason(sql`SELECT * FROM t`)
      expect(reason._tag).toBe("ConnectionError")
      expect(reason.message).toBe("the database is closed")
      // the file is free: another connection takes it exclusively at once
      const other = new DatabaseSync(filename, { timeout: 0 })
      try {
        other.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT")
        expect(other.prepare("SELECT name FROM sqlite_master").all()).toEqual([{ name: "t" }])
      } finally {
        other.close()
      }
      // the layer closes it too
      const viaLayer = yield* Effect.service(SqlClient.SqlClient).pipe(
        Effect.provide(SqliteClient.layer({ filename }), { local: true })
      )
      expect((yield* failureReason(viaLayer`SELECT 1`))._tag).toBe("ConnectionError")
    }))

  it.effect("the cluster's SQL message and runner storage run on it", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const storage = Layer.mergeAll(SqlMessageStorage.layer, SqlRunnerStorage.layer).pipe(
        Layer.provideMerge(SqliteClient.layer({ filename })),
        Layer.provide(ShardingConfig.layer({ shardsPerGroup: 1 })),
        Layer.provide(Digest.layerWebCrypto)
      )
      const result = yield* Effect.gen(function*() {
        const sql = yield* SqliteClient.SqliteClient
        const messages = yield* MessageStorage.MessageStorage
        const runners = yield* RunnerStorage.RunnerStorage
        const address = RunnerAddress.make("localhost", 34431)
        yield* runners.register(Runner.make({ address, groups: ["default"], weight: 1 }), true)
        yield* runners.setRunnerHealth(address, false)
        const registered = (yield* runners.getRunners).map(([runner, healthy]) => [runner.address.port, healthy])
        const shard = ShardId.make("default", 1)
        const acquired = yield* runners.acquire(address, [shard])
        const refreshed = yield* runners.refresh(address, [shard])
        yield* runners.releaseAll(address)
        const tables = (yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`)
          .map((row) => row.name)
        // the storage's poll writes the time into its text: bound, ten polls at ten times prepare it once
        const before = yield* sql.unpreparedCacheStats
        for (let i = 0; i < 10; i++) {
          yield* TestClock.adjust("1 second")
          yield* messages.unprocessedMessages([shard])
        }
        const polls = yield* sql.unpreparedCacheStats
        return {
          registered,
          acquired: acquired.length,
          refreshed: refreshed.length,
          tables,
          pollsPrepared: polls.misses - before.misses
        }
      }).pipe(Effect.provide(storage, { local: true }))
      expect(result.registered).toEqual([[34431, false]])
      expect(result.acquired).toBe(1)
      expect(result.refreshed).toBe(1)
      expect(result.tables).toEqual(expect.arrayContaining(["cluster_messages", "cluster_replies", "cluster_runners"]))
      expect(result.pollsPrepared).toBe(1)
    }))
})
