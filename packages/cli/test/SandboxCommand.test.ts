/**
 * `gcx sandbox`: it serves the sandbox, prints the variables that point gcx
 * at it (which work), and stops on Ctrl+C.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import { entries, environment, gcx, root } from "./helpers.js"

/** Starts `gcx sandbox <args>` and resolves with the process and its banner, once printed. */
const start = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.callback<{ readonly child: ChildProcess.ChildProcess; readonly banner: string }, Error>((resume) => {
    const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", entries.bin, "sandbox", ...args], {
      cwd: root,
      env: environment(env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      if (stdout.includes("Press Ctrl+C to stop.")) resume(Effect.succeed({ child, banner: stdout }))
    })
    child.on("exit", (code) => resume(Effect.fail(new Error(`gcx sandbox exited with ${code}: ${stdout}`))))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Sends SIGINT and resolves with the exit code. */
const interrupt = (child: ChildProcess.ChildProcess) =>
  Effect.callback<number | null>((resume) => {
    child.on("exit", (code) => resume(Effect.succeed(code)))
    child.kill("SIGINT")
  })

/** The `export NAME=value ...` lines of the banner, as variables. */
const exported = (banner: string): Record<string, string> =>
  Object.fromEntries(
    banner.split("\n").filter((line) => line.trim().startsWith("export ")).flatMap((line) =>
      line.trim().slice("export ".length).split(" ").map((pair) => pair.split("=") as [string, string])
    )
  )

describe.concurrent("gcx sandbox", () => {
  it.live("serves the sandbox; its printed variables point gcx at it; Ctrl+C stops it", () =>
    Effect.gen(function*() {
      const { banner, child } = yield* start(["--port", "0", "--quiet", "--time-scale", "0.05"])
      const env = exported(banner)
      expect(env.GCX_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(banner).toContain(`Docs         ${env.GCX_BASE_URL}/docs`)
      const heartbeat = yield* gcx(["heartbeat"], { env })
      expect(heartbeat.code).toBe(0)
      expect(heartbeat.stdout).toContain(`from ${env.GCX_BASE_URL}`)
      expect(yield* interrupt(child)).toBe(130)
    }), { timeout: 60_000 })

  it.live(
    "its admin key is GCX_SANDBOX_ADMIN_KEY, in the dashboard URL's fragment; --allowed-host names are served",
    () =>
      Effect.gen(function*() {
        const adminKey = "cli-admin-key-61f0"
        const { banner, child } = yield* start(["--port", "0", "--quiet", "--allowed-host", "gcx.test"], {
          GCX_SANDBOX_ADMIN_KEY: adminKey
        })
        const baseUrl = exported(banner).GCX_BASE_URL!
        expect(banner).toContain(`  Dashboard    ${baseUrl}/__sandbox/ui#key=${adminKey}\n`)
        const journal = (host: string) =>
          Effect.callback<number, Error>((resume) => {
            const request = Http.get(`${baseUrl}/__sandbox/journal`, {
              headers: { host, "x-admin-key": adminKey },
              agent: false
            }, (response) => resume(Effect.succeed(response.resume().statusCode!)))
            request.on("error", (error) => resume(Effect.fail(error)))
          })
        expect(yield* journal("gcx.test")).toBe(200)
        expect(yield* journal("evil.example")).toBe(421)
        expect(yield* interrupt(child)).toBe(130)
      }),
    { timeout: 60_000 }
  )

  it.live(
    "without GCX_SANDBOX_ADMIN_KEY, each start has a random key; --host 0.0.0.0 then exits 2 saying what to set",
    () =>
      Effect.gen(function*() {
        const keys: Array<string> = []
        for (let run = 0; run < 2; run++) {
          const { banner, child } = yield* start(["--port", "0", "--quiet"])
          keys.push(/#key=(\S+)/.exec(banner)![1]!)
          expect(yield* interrupt(child)).toBe(130)
        }
        expect(keys[0]).toMatch(/^[A-Za-z0-9_-]{32,}$/)
        expect(keys[1]).not.toBe(keys[0])
        const output = yield* gcx(["sandbox", "--port", "0", "--host", "0.0.0.0"])
        expect(output.code).toBe(2)
        expect(output.stderr).toMatch(/^error: sandbox: 0\.0\.0\.0 is not a loopback address: .*GCX_SANDBOX_ADMIN_KEY/)
        expect(output.stdout).toBe("")
      }),
    { timeout: 90_000 }
  )

  it.live("a malformed fault rule exits 2", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["sandbox", "--port", "0", "--fault", "createQuote:explode"])
      expect(output.code).toBe(2)
      expect(output.stderr).toMatch(/^error: --fault createQuote:explode: /)
    }))
})
