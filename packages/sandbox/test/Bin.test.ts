/**
 * `pnpm sandbox` as a process: it prints its URLs and the test credentials,
 * serves, and stops cleanly on SIGTERM and SIGINT (exit code 0, nothing on
 * stderr, the port released).
 */
import { describe, expect, it } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import type { Duration } from "effect"
import { Effect, Option } from "effect"
import * as ChildProcess from "node:child_process"
import { fileURLToPath } from "node:url"
import { call, rawRequest, takenPort } from "./helpers.js"

/** The repository's root, where `pnpm sandbox` runs. */
const root = fileURLToPath(new URL("../../../", import.meta.url))

/** How a process ended. */
interface Ended {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** A running `pnpm sandbox`, its output so far, and how it ends. */
interface Running {
  readonly child: ChildProcess.ChildProcess
  readonly banner: string
  readonly output: { stdout: string; stderr: string }
  readonly ended: Promise<Ended>
}

/**
 * Starts `node --import tsx packages/sandbox/src/bin.ts <args>` (what `pnpm
 * sandbox` runs) and waits for its banner; the process is killed when the
 * scope closes, if it is still running.
 */
const start = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.callback<Running, Error>((resume) => {
      const child = ChildProcess.spawn(
        process.execPath,
        ["--import", "tsx", "packages/sandbox/src/bin.ts", ...args],
        {
          cwd: root,
          env: { ...process.env, [Sandbox.adminKeyVariable]: undefined, ...env },
          stdio: ["ignore", "pipe", "pipe"]
        }
      )
      const output = { stdout: "", stderr: "" }
      const ended = new Promise<Ended>((resolve) => {
        child.on("exit", (code, signal) => resolve({ code, signal, ...output }))
      })
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        output.stdout += chunk
        if (output.stdout.includes("Press Ctrl+C to stop.")) {
          resume(Effect.succeed({ child, banner: output.stdout, output, ended }))
        }
      })
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        output.stderr += chunk
      })
      void ended.then(({ code, signal }) =>
        resume(Effect.fail(new Error(`pnpm sandbox exited (${code ?? signal}) before its banner: ${output.stderr}`)))
      )
    }).pipe(
      Effect.timeoutOrElse({ duration: "60 seconds", orElse: () => Effect.fail(new Error("no banner in 60 s")) })
    ),
    ({ child }) =>
      Effect.sync(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      })
  )

/** Sends `signal` and waits (up to `within`) for the process to end; `None` if it did not. */
const stop = (running: Running, signal: NodeJS.Signals, within: Duration.Input) =>
  Effect.gen(function*() {
    const sentAt = Date.now()
    running.child.kill(signal)
    const ended = yield* Effect.promise(() => running.ended).pipe(Effect.timeout(within), Effect.option)
    return Option.map(ended, (ended) => ({ ...ended, millis: Date.now() - sentAt }))
  })

/** The API URL the banner gives. */
const apiUrl = (banner: string): string => {
  const match = /^ {2}API +(http:\/\/\S+)$/m.exec(banner)
  if (match === null) throw new Error(`no API URL in the banner:\n${banner}`)
  return match[1]!
}

/** The admin key the banner gives, from its Admin line; checked against the Dashboard line's fragment. */
const adminKeyOf = (banner: string): string => {
  const match = /^ {2}Admin +\S+ {2}\(x-admin-key: (\S+)\)$/m.exec(banner)
  if (match === null) throw new Error(`no admin key in the banner:\n${banner}`)
  expect(banner).toContain(`  Dashboard    ${apiUrl(banner)}/__sandbox/ui#key=${encodeURIComponent(match[1]!)}\n`)
  return match[1]!
}

/** Runs `pnpm sandbox <args>` to its end (killed if the fiber is interrupted) and gives its code and output. */
const runToExit = (args: ReadonlyArray<string>) =>
  Effect.callback<Ended>((resume) => {
    const child = ChildProcess.spawn(
      process.execPath,
      ["--import", "tsx", "packages/sandbox/src/bin.ts", ...args],
      { cwd: root, env: { ...process.env, [Sandbox.adminKeyVariable]: undefined }, stdio: ["ignore", "pipe", "pipe"] }
    )
    const output = { stdout: "", stderr: "" }
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output.stdout += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      output.stderr += chunk
    })
    child.on("close", (code, signal) => resume(Effect.succeed({ code, signal, ...output })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("pnpm sandbox", () => {
  it.live.each(["SIGTERM", "SIGINT"] as const)("serves, then stops cleanly on %s: exit code 0, nothing on stderr", (
    signal
  ) =>
    Effect.gen(function*() {
      const running = yield* start(["--port", "0", "--quiet"])
      const { banner } = running
      const baseUrl = apiUrl(banner)
      expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      // the banner lists the URLs, the admin key (drawn for this start) and every test credential
      expect(banner).toContain(`Token        ${baseUrl}/oauth2/token`)
      expect(banner).toContain(`OpenAPI      ${baseUrl}/openapi.json`)
      const adminKey = adminKeyOf(banner)
      expect(adminKey).toMatch(/^[A-Za-z0-9_-]{32,}$/)
      expect((yield* call(`${baseUrl}/__sandbox/journal`, { headers: { "x-admin-key": adminKey } })).status).toBe(200)
      const oldDefault = yield* call(`${baseUrl}/__sandbox/journal`, {
        headers: { "x-admin-key": "sandbox-admin-key" }
      })
      expect(oldDefault.status).toBe(403)
      expect((yield* rawRequest(baseUrl, "GET", "/openapi.json", { host: "evil.example:4710" })).status).toBe(421)
      for (const partner of TestData.partners) {
        expect(banner).toContain(`${partner.clientId} / ${partner.clientSecret} / ${partner.apiKey}`)
      }
      for (const card of Object.values(TestData.Cards)) expect(banner).toContain(card)

      const openapi = yield* call(`${baseUrl}/openapi.json`)
      expect(openapi.status).toBe(200)
      expect(openapi.body.openapi).toMatch(/^3\./)

      // a few seconds at most (it takes well under one); generous for a loaded machine
      const ended = Option.getOrThrowWith(
        yield* stop(running, signal, "10 seconds"),
        () => new Error(`pnpm sandbox did not stop within 10 s of ${signal}`)
      )
      expect(ended).toMatchObject({ code: 0, signal: null, stderr: "" })
      // --quiet: nothing but the banner, no stack trace or interruption report
      expect(ended.stdout).toBe(banner)
      // the server is closed: its port refuses connections
      const refused = yield* Effect.flip(call(`${baseUrl}/openapi.json`))
      expect(String((refused as Error).cause)).toContain("ECONNREFUSED")
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("a bad flag exits 2 with the usage on stderr", () =>
    Effect.gen(function*() {
      const { code, stderr } = yield* runToExit(["--port", "nope"])
      expect(code).toBe(2)
      expect(stderr).toContain("--port must be a number >= 0")
      expect(stderr).toContain("Usage: gcx-sandbox")
    }), { timeout: 90_000 })

  it.live(
    "--host 0.0.0.0 without an admin key exits 2 with one error: line, before listening",
    () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* runToExit(["--host", "0.0.0.0", "--port", "0"])
        expect(code).toBe(2)
        expect(stderr).toMatch(
          /^error: 0\.0\.0\.0 is not a loopback address: .*--admin-key, GCX_SANDBOX_ADMIN_KEY.*\n$/
        )
        expect(stdout).toBe("")
      }),
    { timeout: 90_000 }
  )

  it.live(
    "--host 0.0.0.0 with GCX_SANDBOX_ADMIN_KEY warns, shows the bound address, serves --allowed-host names only",
    () =>
      Effect.gen(function*() {
        const adminKey = "key-from-the-environment-3e9b"
        const { banner } = yield* start(["--port", "0", "--quiet", "--host", "0.0.0.0", "--allowed-host", "gcx.test"], {
          [Sandbox.adminKeyVariable]: adminKey
        })
        const baseUrl = apiUrl(banner)
        const port = new URL(baseUrl).port
        expect(banner).toMatch(/WARN .*0\.0\.0\.0.*other machines can reach it/)
        expect(banner).toContain(`  Listening    0.0.0.0:${port} (every interface`)
        expect(adminKeyOf(banner)).toBe(adminKey)
        expect((yield* rawRequest(baseUrl, "GET", "/openapi.json", { host: `gcx.test:${port}` })).status).toBe(200)
        expect((yield* rawRequest(baseUrl, "GET", "/openapi.json", { host: `evil.example:${port}` })).status).toBe(421)
      }).pipe(Effect.scoped),
    { timeout: 90_000 }
  )

  it.live("a port in use exits 2 with one error: line on stderr, no stack trace", () =>
    Effect.gen(function*() {
      const port = yield* takenPort
      const { code, stderr, stdout } = yield* runToExit(["--port", String(port)])
      expect(code).toBe(2)
      expect(stderr).toBe(`error: the sandbox cannot listen on 127.0.0.1:${port}: the port is in use (EADDRINUSE)\n`)
      expect(stdout).toBe("")
    }).pipe(Effect.scoped), { timeout: 90_000 })
})
