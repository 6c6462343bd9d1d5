/**
 * The PostgreSQL connection of a deployment: `@effect/sql-pg`'s client, checked at startup (its
 * pool connects lazily: a first `SELECT 1` proves the server is there). A URL that is malformed or
 * names a server that cannot be reached fails building the layer with `DatabaseUnreachable`, whose
 * message names the server (never the password) and the cause.
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"

/** The database named by the URL could not be reached (or the URL is not a PostgreSQL URL). */
export class DatabaseUnreachable extends Schema.TaggedError<DatabaseUnreachable>()("DatabaseUnreachable", {
  /** `host:port/database` of the URL, without credentials; `malformedTarget` when it is not a PostgreSQL URL. */
  target: Schema.String,
  /** Why: the driver's error message (connection refused, timeout, authentication, ...). */
  reason: Schema.String
}) {
  override get message(): string {
    return this.target === malformedTarget
      ? `GCX_DATABASE_URL is not a PostgreSQL URL: ${this.reason}`
      : `cannot reach PostgreSQL at ${this.target} (GCX_DATABASE_URL): ${this.reason}`
  }
}

/** The `target` of a `DatabaseUnreachable` whose URL is malformed, or not a PostgreSQL one. */
export const malformedTarget = "(malformed URL)"

/** Whether the database was never tried: its URL is malformed, or not a PostgreSQL one (a setting to fix). */
export const isMalformedUrl = (error: DatabaseUnreachable): boolean => error.target === malformedTarget

/** `host:port/database` of a PostgreSQL URL, without user or password; undefined when malformed. */
export const describeTarget = (url: string): string | undefined => {
  try {
    const parsed = new URL(url)
    if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") return undefined
    return `${parsed.hostname}:${parsed.port === "" ? "5432" : parsed.port}${parsed.pathname}`
  } catch {
    return undefined
  }
}

/** The innermost message of an error chain, scrubbed of the URL's password if it appears. */
const reasonOf = (error: unknown, password: string): string => {
  let current: unknown = error
  let message = "unknown error"
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    const candidate = (current as { message?: unknown }).message
    if (typeof candidate === "string" && candidate !== "") message = candidate
    const code = (current as { code?: unknown }).code
    if (typeof code === "string" && !message.includes(code)) message = `${message} (${code})`
    current = (current as { cause?: unknown }).cause
  }
  return password === "" ? message : message.split(password).join("***")
}

/** Settings of the connection pool. */
export interface Options {
  /** How long connecting may take before `DatabaseUnreachable`. Default 5 s. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Pool size. Default 10. */
  readonly maxConnections?: number | undefined
  /** `application_name` shown in `pg_stat_activity`. Default `gcx`. */
  readonly applicationName?: string | undefined
}

/** The connection as `PgClient` and `SqlClient`; fails with `DatabaseUnreachable`. */
export const layer = (
  url: Redacted.Redacted,
  options: Options = {}
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, DatabaseUnreachable> => {
  const value = Redacted.value(url) as string
  const target = describeTarget(value)
  if (target === undefined) {
    return Layer.effectContext(Effect.fail(
      new DatabaseUnreachable({ target: malformedTarget, reason: "expected postgres://user@host:port/database" })
    ))
  }
  const password = (() => {
    try {
      return decodeURIComponent(new URL(value).password)
    } catch {
      return undefined
    }
  })()
  if (password === undefined) {
    return Layer.effectContext(Effect.fail(
      new DatabaseUnreachable({ target: malformedTarget, reason: "its password is not percent-encoded as a URL's" })
    ))
  }
  return Layer.effectContext(
    Effect.flatMap(pgModule(target), (Pg) =>
      Effect.gen(function*() {
        const context = yield* Layer.build(Pg.layer({
          url,
          connectTimeout: options.connectTimeout ?? Duration.seconds(5),
          maxConnections: options.maxConnections ?? 10,
          applicationName: options.applicationName ?? "gcx"
        }))
        yield* Context.get(context, SqlClient.SqlClient)`SELECT 1`
        return context
      }).pipe(
        Effect.mapError((error) => new DatabaseUnreachable({ target, reason: reasonOf(error, password) }))
      ))
  )
}

/**
 * `@effect/sql-pg/PgClient`, gcx's optional peer, loaded when a deployment uses PostgreSQL (an
 * embedded one never needs it); `DatabaseUnreachable` saying how to install it when it is missing.
 */
const pgModule = (target: string): Effect.Effect<typeof PgClient, DatabaseUnreachable> =>
  Effect.tryPromise({
    try: () => import("@effect/sql-pg/PgClient"),
    catch: (error) =>
      new DatabaseUnreachable({
        target,
        reason: (error as { readonly code?: unknown }).code === "ERR_MODULE_NOT_FOUND"
          ? "the PostgreSQL client is not installed (npm i @effect/sql-pg, gcx's optional peer)"
          : `the PostgreSQL client (@effect/sql-pg) could not be loaded: ${
            error instanceof Error ? error.message : String(error)
          }`
      })
  })

/** The advisory lock under which every node creates the cluster's tables ("gcx!"). */
export const schemaLockKey = 0x67637821

/**
 * Builds `layer` (the cluster's SQL storage, which creates its tables when
 * built) while holding a PostgreSQL advisory lock, so that nodes started at
 * once on a new database create the tables one after the other: concurrent
 * `CREATE TABLE IF NOT EXISTS` fail in PostgreSQL's catalog
 * (`pg_type_typname_nsp_index`). The lock is taken on a reserved connection
 * and released as soon as the layer is built, whether or not it was.
 */
export const withSchemaLock = <A, E, R>(
  layer: Layer.Layer<A, E, R>
): Layer.Layer<A, E, R | SqlClient.SqlClient> =>
  Layer.effectContext(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connectionScope = yield* Scope.make()
    return yield* Effect.gen(function*() {
      const connection = yield* Scope.provide(sql.reserve, connectionScope).pipe(Effect.orDie)
      const onLock = (statement: string) => connection.execute(statement, [schemaLockKey], undefined)
      yield* Effect.orDie(onLock("SELECT pg_advisory_lock($1)"))
      // an unlock fails only when the connection does, and PostgreSQL drops a lost session's locks
      return yield* Layer.build(layer).pipe(Effect.ensuring(Effect.ignore(onLock("SELECT pg_advisory_unlock($1)"))))
    }).pipe(Effect.onExit((exit) => Scope.close(connectionScope, exit)))
  }))
