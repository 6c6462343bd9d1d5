/**
 * The embedded store's SQL client: `effect/sql`'s `SqlClient` on Node's
 * built-in `node:sqlite` (`DatabaseSync`), after upstream's v4
 * `@effect/sql-sqlite-node`, which has no Effect 4 release yet. It gives way
 * to the official driver when one is released (same options, same services).
 *
 * - One connection, used by one fiber at a time behind a semaphore
 *   (`SqlClient.makeSqliteAcquirers`): a statement borrows it, a transaction
 *   or a `reserve` holds it until its scope ends.
 * - Transactions start with `BEGIN IMMEDIATE` (the write lock at once, no
 *   read-to-write upgrade that could fail busy); nested ones are savepoints,
 *   released once done. A COMMIT that fails is rolled back before the
 *   connection is used again.
 * - WAL mode unless `disableWAL`; `synchronous` and an exclusive lock on the
 *   file (`lockingMode: "EXCLUSIVE"`) on request; a busy database is waited
 *   for 5 s (`busyTimeout`), blocking the event loop (`node:sqlite` is
 *   synchronous), then fails with a `LockTimeoutError`.
 * - Prepared statements are kept by SQL text in a bounded LRU cache
 *   (`prepareCacheSize`, default 200). `unprepared` statements, which
 *   SQLite must prepare all the same, are kept in a small cache of their own
 *   (32 statements): `effect/cluster` runs its reply update and its storage
 *   polls unprepared, and texts made once (`sql.unsafe`) churn through that
 *   cache without pushing the prepared ones out.
 * - Integer literals are bound as parameters (`compiler.ts`): the storage's
 *   polls, which write a time and ids into their text, reuse a few
 *   statements instead of preparing one per poll. (`node:sqlite` frees a
 *   statement only when it is collected, so each one prepared per poll
 *   stayed in native memory until a major collection: hundreds at a time.)
 * - Errors are `SqlError`s whose reason says what happened
 *   (`UniqueViolation`, `ConstraintError`, `SqlSyntaxError`,
 *   `LockTimeoutError`, `ConnectionError`, ...; see `sqliteError.ts`).
 * - The database closes when the scope that made the client ends; using the
 *   client afterwards fails with a `ConnectionError`.
 *
 * Not supported: `stream` (dies) and `updateValues`.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlConnection from "effect/sql/SqlConnection"
import type * as SqlError from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import * as Stream from "effect/Stream"
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite"
import * as Compiler from "./compiler.js"
import * as SqliteError from "./sqliteError.js"
import * as StatementCache from "./StatementCache.js"

/** Marks a `SqliteClient`. */
export const TypeId = "~@gcx/workflow/SqliteClient" as const

/** SQLite's `synchronous` setting. */
export type Synchronous = "OFF" | "NORMAL" | "FULL" | "EXTRA"

/** SQLite's `locking_mode`: `EXCLUSIVE` keeps the file locked for this connection until it closes. */
export type LockingMode = "NORMAL" | "EXCLUSIVE"

/** Settings of the client. */
export interface SqliteClientConfig {
  /** The database file (`:memory:` for one in memory). Its folder must exist. */
  readonly filename: string
  /** Opens the database read-only. Default false. */
  readonly readonly?: boolean | undefined
  /** Leaves the journal mode alone instead of switching to WAL. Default false (WAL on). */
  readonly disableWAL?: boolean | undefined
  /** `PRAGMA synchronous`, set at open. Default: SQLite's (`FULL`). */
  readonly synchronous?: Synchronous | undefined
  /**
   * `PRAGMA locking_mode`, set at open (after WAL). `EXCLUSIVE` also takes the
   * lock at once (`BEGIN EXCLUSIVE`), so a file another connection holds
   * fails the open, after `busyTimeout`, with a `LockTimeoutError`. Default
   * `NORMAL`.
   */
  readonly lockingMode?: LockingMode | undefined
  /** How long a busy database is waited for (blocking the event loop). Default 5 s. */
  readonly busyTimeout?: Duration.Input | undefined
  /** The most prepared statements kept. Default 200; 0 keeps none. */
  readonly prepareCacheSize?: number | undefined
  /** Added to every statement's span. */
  readonly spanAttributes?: Record<string, unknown> | undefined
  readonly transformResultNames?: ((str: string) => string) | undefined
  readonly transformQueryNames?: ((str: string) => string) | undefined
}

/** The `SqlClient` on `node:sqlite`, with its settings and its statement cache's figures. */
export interface SqliteClient extends SqlClient.SqlClient {
  readonly [TypeId]: typeof TypeId
  readonly config: SqliteClientConfig
  /** How the prepared-statement cache is used (size, hits, misses, evictions). */
  readonly statementCacheStats: Effect.Effect<StatementCache.Stats>
  /** How the cache of `unprepared` statements is used. */
  readonly unpreparedCacheStats: Effect.Effect<StatementCache.Stats>
  /** Not supported by SQLite. */
  readonly updateValues: never
}

/** The client, besides `SqlClient.SqlClient`. */
export const SqliteClient = Context.Service<SqliteClient>("@gcx/workflow/SqliteClient")

const defaultBusyTimeout = Duration.seconds(5)
const defaultPrepareCacheSize = 200
/** The most `unprepared` statements kept (in a cache of their own). */
const unpreparedCacheSize = 32
/** SQLite's largest busy timeout (a C int of milliseconds). */
const maxBusyTimeoutMillis = 2_147_483_647
const synchronousSettings: ReadonlySet<string> = new Set<Synchronous>(["OFF", "NORMAL", "FULL", "EXTRA"])

const busyTimeoutMillis = (input: Duration.Input | undefined): number =>
  Math.min(maxBusyTimeoutMillis, Math.max(0, Math.round(Duration.toMillis(input ?? defaultBusyTimeout))))

/** Opens the database, sets it up, and closes it when the scope ends. */
const open = (options: SqliteClientConfig): Effect.Effect<DatabaseSync, SqlError.SqlError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () =>
        new DatabaseSync(options.filename, {
          readOnly: options.readonly === true,
          timeout: busyTimeoutMillis(options.busyTimeout)
        }),
      catch: (cause) => SqliteError.fromCause(cause, "Failed to open the database", "open")
    }),
    (db) => Effect.sync(() => db.isOpen && db.close())
  ).pipe(
    Effect.tap((db) =>
      Effect.try({
        try: () => setUp(db, options),
        catch: (cause) => SqliteError.fromCause(cause, "Failed to set up the database", "open")
      })
    )
  )

/** WAL, `synchronous`, then the locking mode: the order matters (WAL first, so that `-shm` exists). */
const setUp = (db: DatabaseSync, options: SqliteClientConfig): void => {
  const writable = options.readonly !== true
  if (writable && options.disableWAL !== true) db.exec("PRAGMA journal_mode = WAL")
  if (options.synchronous !== undefined) {
    if (!synchronousSettings.has(options.synchronous)) {
      throw new Error(`synchronous must be one of ${[...synchronousSettings].join(", ")}`)
    }
    db.exec(`PRAGMA synchronous = ${options.synchronous}`)
  }
  if (options.lockingMode === "EXCLUSIVE") {
    db.exec("PRAGMA locking_mode = EXCLUSIVE")
    if (writable) db.exec("BEGIN EXCLUSIVE; COMMIT")
  }
}

/** A prepared statement, and whether it returns rows (fixed once prepared). */
interface Prepared {
  readonly statement: StatementSync
  readonly reader: boolean
}

const prepare = (db: DatabaseSync) => (sql: string): Prepared => {
  const statement = db.prepare(sql)
  return { statement, reader: statement.columns().length > 0 }
}

/** `node:sqlite` binds neither `undefined` nor (in its types) booleans: null and 0/1 instead. */
const bindable = (params: ReadonlyArray<unknown>): Array<SQLInputValue> => {
  let copy: Array<unknown> | undefined
  for (let i = 0; i < params.length; i++) {
    const value = params[i]
    if (value === undefined || typeof value === "boolean") {
      copy ??= params.slice()
      copy[i] = value === undefined ? null : value ? 1 : 0
    }
  }
  return (copy ?? params) as Array<SQLInputValue>
}

type Result = "rows" | "raw" | "values"

/** The connection over `db`: statements from the cache (`execute*`) or from the unprepared ones' (`*Unprepared`). */
const makeConnection = (
  db: DatabaseSync,
  cache: StatementCache.StatementCache<Prepared>,
  unpreparedCache: StatementCache.StatementCache<Prepared>
): SqlConnection.Connection => {
  const run = (sql: string, params: ReadonlyArray<unknown>, result: Result, cached: boolean) =>
    Effect.withFiber<any, SqlError.SqlError>((fiber) => {
      if (!db.isOpen) return Effect.fail(SqliteError.closed("execute"))
      let prepared: Prepared
      try {
        prepared = (cached ? cache : unpreparedCache).get(sql)
      } catch (cause) {
        return Effect.fail(SqliteError.fromCause(cause, "Failed to prepare statement", "prepare"))
      }
      const { reader, statement } = prepared
      try {
        statement.setReadBigInts(fiber.getRef(SqlClient.SafeIntegers))
        const args = bindable(params)
        if (!reader) {
          const changes = statement.run(...args)
          return Effect.succeed(
            result === "raw" ? { changes: changes.changes, lastInsertRowid: changes.lastInsertRowid } : []
          )
        }
        if (result !== "values") return Effect.succeed(statement.all(...args))
        statement.setReturnArrays(true)
        try {
          return Effect.succeed(statement.all(...args))
        } finally {
          statement.setReturnArrays(false)
        }
      } catch (cause) {
        return Effect.fail(SqliteError.fromCause(cause, "Failed to execute statement", "execute"))
      }
    })
  const rows = (
    effect: Effect.Effect<ReadonlyArray<any>, SqlError.SqlError>,
    transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) => transformRows === undefined ? effect : Effect.map(effect, transformRows)
  return {
    execute: (sql, params, transformRows) => rows(run(sql, params, "rows", true), transformRows),
    executeRaw: (sql, params) => run(sql, params, "raw", true),
    executeValues: (sql, params) => run(sql, params, "values", true),
    executeValuesUnprepared: (sql, params) => run(sql, params, "values", false),
    executeUnprepared: (sql, params, transformRows) => rows(run(sql, params, "rows", false), transformRows),
    executeStream: () => Stream.die(new Error("SqliteClient: streaming queries are not supported"))
  }
}

/**
 * A client on `options.filename`, open until the scope ends. Fails with a
 * `SqlError` when the database cannot be opened or set up (a `ConnectionError`
 * for a file that cannot be opened, a `LockTimeoutError` for one locked by
 * another connection).
 */
export const make = Effect.fnUntraced(function*(
  options: SqliteClientConfig
): Effect.fn.Return<SqliteClient, SqlError.SqlError, Scope.Scope | Reactivity.Reactivity> {
  const db = yield* open(options)
  const cache = StatementCache.make(options.prepareCacheSize ?? defaultPrepareCacheSize, prepare(db))
  const unpreparedCache = StatementCache.make(unpreparedCacheSize, prepare(db))
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      cache.clear()
      unpreparedCache.clear()
    })
  )
  const connection = makeConnection(db, cache, unpreparedCache)
  const semaphore = yield* Semaphore.make(1)
  const acquirers = SqlClient.makeSqliteAcquirers({
    connection: Effect.succeed(connection),
    semaphore,
    isTransaction: () => db.isOpen && db.isTransaction
  })
  const client = yield* SqlClient.make({
    ...acquirers,
    compiler: Compiler.make(options.transformQueryNames),
    driver: "sqlite-node",
    spanAttributes: [
      ...(options.spanAttributes === undefined ? [] : Object.entries(options.spanAttributes)),
      ["db.system.name", "sqlite"]
    ],
    transformRows: options.transformResultNames === undefined
      ? undefined
      : Statement.defaultTransforms(options.transformResultNames).array,
    // a read-only connection cannot take the write lock
    beginTransaction: options.readonly === true ? "BEGIN" : "BEGIN IMMEDIATE",
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
    prepareTransactionControls: true
  })
  return Object.assign(client as SqliteClient, {
    [TypeId]: TypeId,
    config: options,
    statementCacheStats: Effect.sync(cache.stats),
    unpreparedCacheStats: Effect.sync(unpreparedCache.stats)
  })
})

/** `SqliteClient` and `SqlClient.SqlClient` on `config.filename`, closed with the layer. */
export const layer = (config: SqliteClientConfig): Layer.Layer<SqliteClient | SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.effectContext(
    Effect.map(
      make(config),
      (client) => Context.make(SqliteClient, client).pipe(Context.add(SqlClient.SqlClient, client))
    )
  ).pipe(Layer.provide(Reactivity.layer))
