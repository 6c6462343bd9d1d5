/**
 * `gcx sandbox`: it serves the sandbox, prints the variables that point gcx
 * at it (which work), and stops on Ctrl+C.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import { entries, environment, gcx, root } from "./helpers.js"

/** Starts `gcx sandbox <args>` and resolves with the process and its banner, once printed. */
const start = (args: ReadonlyArray<string>) =>
  Effect.async<{ readonly child: ChildProcess.ChildProcess; readonly banner: string }, Error>((resume) => {
    const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", entries.bin, "sandbox", ...args], {
      cwd: root,
      env: environment(),
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
  Effect.async<number | null>((resume) => {
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

  it.live("a malformed fault rule exits 2", () =>
    Effect.gen(function*() {
      const output = yield* gcx(["sandbox", "--port", "0", "--fault", "createQuote:explode"])
      expect(output.code).toBe(2)
      expect(output.stderr).toMatch(/^error: --fault createQuote:explode: /)
    }))
})
