/**
 * Commands that serve other nodes or customers (`gcx runner`, `gcx serve`, client-only `--durable`) never fall back to the
 * embedded sandbox: without connection settings they exit 2 naming the missing variables, before any connection
 * to the database, and use the embedded sandbox only with an explicit `--embedded`. The interactive commands keep
 * their fallback. Each runs the real `gcx` in a child process.
 */
import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import { TestData } from "@gcx/sandbox"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Certificates from "../../workflow/test/utils/certificates.js"
import * as TestPg from "../../workflow/test/utils/postgres.js"
import { cardArgs, gcx } from "./helpers.js"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-serving-test-"))
afterAll(() => Fs.rmSync(directory, { recursive: true, force: true }))

/** A PostgreSQL URL nothing listens on (port 9, discard): reaching it would fail with exit 5, not 2. */
const unreachableDatabase = "postgres://gcx:database-password@127.0.0.1:9/gcx"

/** What a runner or a client-only node has besides the connection: a database, a data key, an address. */
const nodeEnv = {
  GCX_DATABASE_URL: unreachableDatabase,
  GCX_DATA_KEY: randomBytes(32).toString("base64"),
  GCX_RUNNER_ADDRESS: "127.0.0.1:34431"
}

/** Every required connection variable is named; nothing says the embedded sandbox is used. */
const expectRefused = (output: { readonly code: number | null; readonly stderr: string }, command: string) => {
  expect(output.code).toBe(2)
  for (const name of ["GCX_BASE_URL", "GCX_AUTH_URL", "GCX_CLIENT_SECRET", "GCX_API_KEY"]) {
    expect(output.stderr).toContain(name)
  }
  expect(output.stderr).not.toContain("using the embedded sandbox")
  expect(output.stderr).toContain(`(see gcx ${command} --help)`)
  expect(output.stderr).not.toContain("database-password")
}

describe.concurrent("commands that serve never invent a service", () => {
  it.live("gcx runner without connection settings exits 2 naming them, before reaching the database", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["runner", "--insecure-loopback"], { env: nodeEnv })
      expectRefused(output, "runner")
    }))

  it.live("gcx serve without connection settings exits 2 naming them, embedded or client-only, before any database", () =>
    Effect.gen(function*() {
      const database = Path.join(directory, "serve.db")
      const embedded = yield* gcx(["serve", "--port", "0"], {
        env: { GCX_DATA_KEY: nodeEnv.GCX_DATA_KEY, GCX_DATABASE_FILE: database }
      })
      expectRefused(embedded, "serve")
      expect(Fs.existsSync(database)).toBe(false)
      const clientOnly = yield* gcx(["serve", "--port", "0"], { env: nodeEnv })
      expectRefused(clientOnly, "serve")
    }))

  it.live("gcx result without connection settings exits 2 naming them: a quote is never resumed against a sandbox", () =>
    Effect.gen(function*() {
      const database = Path.join(directory, "result.db")
      const output = yield* gcx(["result", "f".repeat(32), "--wait"], {
        env: { GCX_DATA_KEY: nodeEnv.GCX_DATA_KEY, GCX_DATABASE_FILE: database }
      })
      expectRefused(output, "result")
      expect(Fs.existsSync(database)).toBe(false)
      // with --embedded, the embedded sandbox's quotes (a file of their own), never the real service's
      const embedded = yield* gcx(["result", "f".repeat(32), "--embedded"], {
        env: { GCX_DATA_KEY: nodeEnv.GCX_DATA_KEY, GCX_DATABASE_FILE: database }
      })
      expect(embedded.code).toBe(2)
      expect(embedded.stderr).toContain(
        `no durable quote was submitted with requestId '${"f".repeat(32)}' in the embedded sandbox's database, ${
          Path.join(directory, "result.sandbox.db")
        }`
      )
      expect(Fs.existsSync(database)).toBe(false)
    }))

  it.live("gcx serve --embedded, client-only on an unreachable database: the embedded sandbox, then exit 5", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["serve", "--embedded", "--port", "0"], {
        env: { ...nodeEnv, GCX_RUNNER_INSECURE_LOOPBACK: "true" }
      })
      expect(output.stderr).toMatch(/^gcx: --embedded: using the embedded sandbox at http:\/\/127\.0\.0\.1:\d+$/m)
      expect(output.stderr).toContain("cannot reach PostgreSQL at 127.0.0.1:9")
      expect(output.stderr).not.toContain("database-password")
      expect(output.code).toBe(5)
    }))

  it.live("gcx serve on a port in use exits 2 naming the address and the reason", () =>
    Effect.gen(function*() {
      const busy = yield* Effect.acquireRelease(
        Effect.callback<Net.Server>((resume) => {
          const server = Net.createServer()
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const port = (busy.address() as Net.AddressInfo).port
      const output = yield* gcx(["serve", "--embedded", "--port", String(port)], {
        env: { GCX_DATA_KEY: nodeEnv.GCX_DATA_KEY, GCX_DATABASE_FILE: Path.join(directory, "busy.db") }
      })
      expect(output.code).toBe(2)
      expect(output.stderr).toContain(
        `error: gcx serve cannot listen on 127.0.0.1:${port}: the port is in use (EADDRINUSE)`
      )
    }).pipe(Effect.scoped))

  it.live("gcx runner --embedded uses the embedded sandbox, and says so", () =>
    Effect.gen(function*() {
      // past the connection, the runner reaches for its database: unreachable here, exit 5
      const output = yield* gcx(["runner", "--embedded", "--insecure-loopback"], { env: nodeEnv })
      expect(output.stderr).toMatch(/^gcx: --embedded: using the embedded sandbox at http:\/\/127\.0\.0\.1:\d+$/m)
      expect(output.stderr).toContain("cannot reach PostgreSQL at 127.0.0.1:9")
      expect(output.code).toBe(5)
    }))

  it.live("gcx runner without the cluster's TLS certificates exits 2 naming them, before reaching the database", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["runner", "--embedded"], { env: nodeEnv })
      expect(output.code).toBe(2)
      const lines = output.stderr.trim().split("\n").filter((line) => line.startsWith("error:"))
      expect(lines).toHaveLength(1)
      for (const name of ["GCX_RUNNER_TLS_CA", "GCX_RUNNER_TLS_CERT", "GCX_RUNNER_TLS_KEY", "--insecure-loopback"]) {
        expect(lines[0]).toContain(name)
      }
      expect(lines[0]).toContain("(see gcx runner --help)")
      expect(output.stderr).not.toContain("cannot reach PostgreSQL")
    }))

  it.live("gcx runner --insecure-loopback on an address that is not loopback exits 2", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["runner", "--embedded", "--insecure-loopback", "--listen", "0.0.0.0:34431"], {
        env: nodeEnv
      })
      expect(output.code).toBe(2)
      expect(output.stderr).toContain("--insecure-loopback listens on a loopback address only, got 0.0.0.0")
      expect(output.stderr).not.toContain("cannot reach PostgreSQL")
      // listening on loopback, but advertised at an address the others would dial in clear
      const advertised = yield* gcx(["runner", "--embedded", "--insecure-loopback", "--listen", "127.0.0.1:34431"], {
        env: { ...nodeEnv, GCX_RUNNER_ADDRESS: "10.1.2.3:34431" }
      })
      expect(advertised.code).toBe(2)
      expect(advertised.stderr).toContain("GCX_RUNNER_ADDRESS must be a loopback address too, got 10.1.2.3")
    }))

  it.live("gcx runner advertising an address no node can reach (--listen 0.0.0.0, no GCX_RUNNER_ADDRESS) exits 2", () =>
    Effect.gen(function*() {
      const { GCX_RUNNER_ADDRESS: _, ...env } = nodeEnv
      const output = yield* gcx(["runner", "--embedded", "--insecure-loopback", "--listen", "0.0.0.0:34431"], { env })
      expect(output.code).toBe(2)
      expect(output.stderr).toContain(
        "the runner's address 0.0.0.0 is not one the other nodes can reach: set GCX_RUNNER_ADDRESS"
      )
      expect(output.stderr).not.toContain("cannot reach PostgreSQL")
    }))

  it.live("gcx runner --insecure-loopback with the TLS certificates set says the flag is ignored: mutual TLS", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["runner", "--embedded", "--insecure-loopback"], {
        env: { ...nodeEnv, ...Certificates.make("ignored-flag").env }
      })
      expect(output.stderr).toContain(
        "gcx: --insecure-loopback ignored: GCX_RUNNER_TLS_* are set, so the runner uses mutual TLS"
      )
      const variable = yield* gcx(["runner", "--embedded"], {
        env: { ...nodeEnv, ...Certificates.make("ignored-variable").env, GCX_RUNNER_INSECURE_LOOPBACK: "true" }
      })
      expect(variable.stderr).toContain(
        "gcx: GCX_RUNNER_INSECURE_LOOPBACK ignored: GCX_RUNNER_TLS_* are set, so the runner uses mutual TLS"
      )
      // then it reaches for its database: unreachable here
      expect(output.stderr).toContain("cannot reach PostgreSQL at 127.0.0.1:9")
      expect(output.code).toBe(5)
    }))

  it.live("a GCX_DATABASE_URL that is not a PostgreSQL URL exits 2, runner or client-only, before any connection", () =>
    Effect.gen(function*() {
      const env = { ...nodeEnv, GCX_DATABASE_URL: "mysql://gcx:database-password@127.0.0.1:9/gcx" }
      for (const args of [["runner", "--embedded", "--insecure-loopback"], ["result", "f".repeat(32), "--embedded"]]) {
        const output = yield* gcx(args, { env: { ...env, GCX_RUNNER_INSECURE_LOOPBACK: "true" } })
        expect(output.code, output.stderr).toBe(2)
        expect(output.stderr).toContain("GCX_DATABASE_URL is not a PostgreSQL URL")
        expect(output.stderr).not.toContain("database-password")
        expect(output.stderr).not.toContain("reading the durable quotes of PostgreSQL")
      }
    }))

  it.live("a client-only quote --durable without the cluster's TLS certificates exits 2 naming them", () =>
    Effect.gen(function*() {
      const connection = {
        GCX_BASE_URL: "http://127.0.0.1:9",
        GCX_AUTH_URL: "http://127.0.0.1:9/token",
        GCX_CLIENT_ID: "client",
        GCX_CLIENT_SECRET: "client-secret",
        GCX_API_KEY: "api-key"
      }
      const output = yield* gcx(["quote", "--durable", ...cardArgs(TestData.Cards.success)], {
        env: { ...nodeEnv, ...connection }
      })
      expect(output.code).toBe(2)
      for (const name of ["GCX_RUNNER_TLS_CA", "GCX_RUNNER_TLS_CERT", "GCX_RUNNER_TLS_KEY"]) {
        expect(output.stderr).toContain(name)
      }
      expect(output.stderr).not.toContain("cannot reach PostgreSQL")
    }))

  it.live("a client-only quote --durable without connection settings exits 2 naming them", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["quote", "--durable", ...cardArgs(TestData.Cards.success)], { env: nodeEnv })
      expectRefused(output, "quote")
    }))

  it.live("an embedded quote --durable (no GCX_DATABASE_URL) keeps the interactive fallback, said on stderr", () =>
    Effect.gen(function*() {
      const { GCX_DATABASE_URL: _, ...env } = nodeEnv
      const output = yield* gcx(["quote", "--durable", ...cardArgs(TestData.Cards.instant)], {
        env: { ...env, GCX_DATABASE_FILE: Path.join(directory, "gcx.db") }
      })
      expect(output.stderr).toMatch(/^gcx: no GCX_\* connection settings \(--embedded\): using the embedded sandbox/m)
      expect(output.code).toBe(0)
    }))
})

layer(Layer.provideMerge(TestPg.layerClient, TestPg.layer()), { excludeTestServices: true, timeout: 120_000 })(
  "nodes on a PostgreSQL without runners",
  (it) => {
    it.effect("gcx result says it reads, and that no runner is alive: its quotes would wait", () =>
      Effect.gen(function*() {
        const db = yield* TestPg.PgTestDatabase
        const output = yield* gcx(["result", "f".repeat(32), "--embedded"], {
          env: { ...nodeEnv, ...Certificates.make("no-runner").env, GCX_DATABASE_URL: db.urlString }
        })
        const host = `127.0.0.1:${db.port}`
        expect(output.stderr).toContain(`gcx: client-only, reading the durable quotes of PostgreSQL ${host}`)
        expect(output.stderr).toContain(
          `gcx: no runner of PostgreSQL ${host}`
        )
        expect(output.stderr).toContain("is alive: the quotes wait until one starts (gcx runner)")
        expect(output.stderr).not.toContain("submitting")
        expect(output.stderr).toContain(`in the database of GCX_DATABASE_URL, PostgreSQL ${host}/`)
        expect(output.code).toBe(2)
      }))

    it.effect("gcx runner on a port in use exits 2 naming the address and the reason", () =>
      Effect.gen(function*() {
        const db = yield* TestPg.PgTestDatabase
        const taken = Net.createServer()
        yield* Effect.promise(() => new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve)))
        const port = (taken.address() as Net.AddressInfo).port
        const output = yield* gcx(["runner", "--embedded", "--insecure-loopback", "--listen", `127.0.0.1:${port}`], {
          env: { ...nodeEnv, GCX_DATABASE_URL: db.urlString, GCX_RUNNER_ADDRESS: `127.0.0.1:${port}` }
        }).pipe(Effect.ensuring(Effect.sync(() => taken.close())))
        expect(output.code, output.stderr).toBe(2)
        expect(output.stderr).toContain(
          `the runner cannot listen on 127.0.0.1:${port}: the port is in use (EADDRINUSE)`
        )
      }))
  }
)
