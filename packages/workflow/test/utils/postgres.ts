/**
 * A throwaway PostgreSQL for tests: `initdb` into a temporary directory and `pg_ctl start` on a free
 * loopback port (as the `postgres` OS user when run as root, since initdb refuses root), one fresh
 * database, and everything removed when the scope closes. With `GCX_TEST_DATABASE_URL` set, that
 * server is used instead: a fresh database is created on it and dropped afterwards.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Effect, Layer, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** A running test database. */
export interface TestDatabase {
  /** The connection URL of the test database (no password: loopback trust auth). */
  readonly url: Redacted.Redacted<string>
  /** The URL in clear, for child processes' environment. */
  readonly urlString: string
  /** The server's port. */
  readonly port: number
  /** Stops the server (fast shutdown); only for a server this helper started. */
  readonly stop: Effect.Effect<void, Error>
  /** Starts the stopped server again on the same port and data directory. */
  readonly start: Effect.Effect<void, Error>
}

/** The test database of the current scope. */
export class PgTestDatabase
  extends Context.Service<PgTestDatabase, TestDatabase>()("@gcx/workflow/test/PgTestDatabase")
{}

/** Directory of the PostgreSQL server binaries: `initdb` on PATH, else the newest Debian install. */
export const binDir = (): string | undefined => {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir !== "" && fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"))) return dir
  }
  const debian = "/usr/lib/postgresql"
  if (!fs.existsSync(debian)) return undefined
  const versions = fs.readdirSync(debian).filter((v) => fs.existsSync(path.join(debian, v, "bin", "initdb")))
  versions.sort((a, b) => Number(b) - Number(a))
  return versions.length > 0 ? path.join(debian, versions[0]!, "bin") : undefined
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0

/** Runs a server binary, as `postgres` when we are root; fails with its output. */
const run = (binary: string, args: ReadonlyArray<string>) =>
  Effect.callback<void, Error>((resume) => {
    const [command, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", binary, ...args]] : [binary, [...args]]
    ChildProcess.execFile(command, argv, { timeout: 60_000 }, (error, stdout, stderr) =>
      resume(
        error === null
          ? Effect.void
          : Effect.fail(new Error(`${path.basename(binary)} failed: ${error.message}\n${stdout}\n${stderr}`))
      ))
  })

/** A port free on 127.0.0.1 at the time of the call. */
export const freePort: Effect.Effect<number, Error> = Effect.callback((resume) => {
  const server = net.createServer()
  server.once("error", (error) => resume(Effect.fail(error)))
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as net.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Runs one statement on a database through a short-lived client. */
const adminStatement = (url: string, statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url) }), { local: true }),
    Effect.asVoid
  )

const withDatabase = (url: string, database: string) => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

const databaseName = () =>
  `gcx_test_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`

/** A database on the external server named by `GCX_TEST_DATABASE_URL`, dropped when the scope closes. */
const external = (serverUrl: string) =>
  Effect.gen(function*() {
    const name = databaseName()
    yield* Effect.acquireRelease(
      adminStatement(serverUrl, `CREATE DATABASE ${name}`),
      () => adminStatement(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
    )
    const urlString = withDatabase(serverUrl, name)
    const unsupported = Effect.fail(new Error("GCX_TEST_DATABASE_URL: the external server cannot be stopped"))
    return {
      url: Redacted.make(urlString),
      urlString,
      port: Number(new URL(urlString).port || 5432),
      stop: unsupported,
      start: unsupported
    } satisfies TestDatabase
  })

/** A server of our own in a temporary directory, stopped and removed when the scope closes. */
const throwaway = Effect.gen(function*() {
  const bin = binDir()
  if (bin === undefined) {
    return yield* Effect.fail(
      new Error("PostgreSQL not found: install it (apt-get install -y postgresql) or set GCX_TEST_DATABASE_URL")
    )
  }
  const root = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "gcx-pg-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const data = path.join(root, "data")
  fs.mkdirSync(data, { mode: 0o700 })
  if (isRoot) {
    const { gid, uid } = userIds("postgres")
    fs.chownSync(root, uid, gid)
    fs.chownSync(data, uid, gid)
  }
  yield* run(path.join(bin, "initdb"), [
    "-D",
    data,
    "-U",
    "postgres",
    "--auth=trust",
    "--no-sync",
    "--encoding=UTF8",
    "--locale=C"
  ])
  const port = yield* freePort
  const options = [
    `-c listen_addresses=127.0.0.1`,
    `-c port=${port}`,
    `-c unix_socket_directories='${root}'`,
    `-c max_connections=200`,
    `-c fsync=off`,
    `-c synchronous_commit=off`,
    `-c full_page_writes=off`
  ].join(" ")
  const pgCtl = path.join(bin, "pg_ctl")
  const start = run(pgCtl, ["start", "-w", "-t", "60", "-D", data, "-l", path.join(root, "server.log"), "-o", options])
  const stop = run(pgCtl, ["stop", "-w", "-m", "fast", "-D", data])
  yield* Effect.acquireRelease(
    start,
    () => run(pgCtl, ["stop", "-w", "-m", "immediate", "-D", data]).pipe(Effect.ignore)
  )
  const serverUrl = `postgres://postgres@127.0.0.1:${port}/postgres`
  yield* adminStatement(serverUrl, "CREATE DATABASE gcx")
  const urlString = withDatabase(serverUrl, "gcx")
  return { url: Redacted.make(urlString), urlString, port, stop, start } satisfies TestDatabase
})

const userIds = (name: string): { uid: number; gid: number } => {
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((entry) => entry.startsWith(`${name}:`))
  if (line === undefined) throw new Error(`no OS user ${name}: PostgreSQL's initdb refuses to run as root`)
  const fields = line.split(":")
  return { uid: Number(fields[2]), gid: Number(fields[3]) }
}

/**
 * A test database for the current scope: `GCX_TEST_DATABASE_URL`'s server when set (or when
 * `ownServer` is false), else a throwaway server of our own. Pass `ownServer: true` for tests that
 * stop and start the server.
 */
export const make = (options?: { readonly ownServer?: boolean }) => {
  const externalUrl = process.env.GCX_TEST_DATABASE_URL
  return externalUrl !== undefined && externalUrl !== "" && options?.ownServer !== true
    ? external(externalUrl)
    : throwaway
}

/** The test database as a layer. */
export const layer = (options?: { readonly ownServer?: boolean }): Layer.Layer<PgTestDatabase, Error> =>
  Layer.effect(PgTestDatabase, make(options))

/** A `PgClient` on the test database of the context. */
export const layerClient = Layer.unwrap(
  Effect.map(PgTestDatabase, (db) => PgClient.layer({ url: db.url }))
)
