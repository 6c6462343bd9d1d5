/**
 * `gcx serve` for the clients' tests: the real command as a separate process
 * (the TypeScript entry, as `pnpm gcx` runs it), embedded on a SQLite file in
 * a temporary folder, against a sandbox of the test process, with an API key
 * made by `gcx serve keys create`.
 */
import { Sandbox } from "@gcx/sandbox"
import type { Scope } from "effect"
import { Duration, Effect, Schedule } from "effect"
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository root: the processes run there, as `pnpm gcx` does. */
export const root = fileURLToPath(new URL("../../..", import.meta.url))

/** What a process printed and how it ended. */
export interface Output {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of the tests without any `GCX_*` variable, plus `env`. */
const environment = (env: Record<string, string>): Record<string, string> => ({
  ...Object.fromEntries(
    Object.entries(process.env).filter(([name, value]) => !name.startsWith("GCX_") && value !== undefined)
  ) as Record<string, string>,
  ...env
})

/** Runs `command` to its end in the repository root (killed after `timeout` ms). */
export const run = (
  command: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  timeout = 60_000
): Effect.Effect<Output> =>
  Effect.callback<Output>((resume) => {
    const child = ChildProcess.spawn(command, args, { cwd: root, env: environment(env), stdio: "pipe" })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeout)
    child.on("close", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })

/** `gcx <args>` (the TypeScript entry) to its end. */
export const gcx = (args: ReadonlyArray<string>, env: Record<string, string>): Effect.Effect<Output> =>
  run(process.execPath, ["--import", "tsx", "packages/cli/src/bin.ts", ...args], env)

/** A free TCP port of 127.0.0.1, as the system gives it (free when asked; taken by whoever binds it next). */
export const freePort: Effect.Effect<number> = Effect.callback<number>((resume) => {
  const server = Net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** A running `gcx serve` and the key to call it with. */
export interface Gateway {
  readonly url: string
  readonly apiKey: string
  /** The secret of the key's webhook endpoint, when one was asked for. */
  readonly webhookSecret: string | undefined
  /** What the gateway printed so far (its logs): to scan for card data. */
  readonly output: () => string
}

/** Whether `url` answers 200. */
const answers = (url: string): Effect.Effect<boolean> =>
  Effect.promise(() => fetch(url).then((answer) => answer.ok, () => false))

/**
 * Starts `gcx serve` on a free port, embedded on a new SQLite file, against
 * `sandbox`; makes an API key first (`gcx serve keys create`), with a webhook
 * endpoint at `webhook` and the flags `keyFlags` (`--rate`, `--burst`) when
 * given. Stopped (SIGTERM) when the scope closes.
 */
export const startGateway = (
  sandbox: Sandbox.Service,
  options: { readonly webhook?: string; readonly keyFlags?: ReadonlyArray<string> } = {}
): Effect.Effect<Gateway, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-gateway-clients-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
    const port = yield* freePort
    const env = {
      ...Sandbox.environment(sandbox),
      GCX_DATABASE_FILE: Path.join(directory, "gcx.db"),
      GCX_DATA_KEY: Crypto.randomBytes(32).toString("base64")
    }
    const created = yield* gcx([
      "serve",
      "keys",
      "create",
      "--name",
      "clients-test",
      ...(options.webhook !== undefined ? ["--webhook", options.webhook] : []),
      ...(options.keyFlags ?? [])
    ], env)
    const apiKey = /gcx_sk_[A-Za-z0-9_-]{43}/.exec(created.stdout)?.[0]
    const webhookSecret = /whsec_[A-Za-z0-9_-]{43}/.exec(created.stdout)?.[0]
    if (created.code !== 0 || apiKey === undefined || (options.webhook !== undefined && webhookSecret === undefined)) {
      return yield* Effect.fail(new Error(`gcx serve keys create failed (${created.code}):\n${created.stderr}`))
    }
    let output = ""
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = ChildProcess.spawn(
          process.execPath,
          ["--import", "tsx", "packages/cli/src/bin.ts", "serve", "--port", String(port)],
          { cwd: root, env: environment(env), stdio: "pipe" }
        )
        child.stdout.on("data", (chunk) => (output += chunk))
        child.stderr.on("data", (chunk) => (output += chunk))
        return child
      }),
      (child) =>
        Effect.callback<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
          child.once("close", () => {
            clearTimeout(timer)
            resume(Effect.void)
          })
          child.kill("SIGTERM")
        })
    )
    const url = `http://127.0.0.1:${port}`
    // ready once /healthz answers; give up after 60 s (the process's start, tsx's compile) or when it ended
    yield* answers(`${url}/healthz`).pipe(
      Effect.flatMap((ok) =>
        ok ? Effect.void : child.exitCode !== null ?
          Effect.fail(new Error(`gcx serve ended (${child.exitCode}):\n${output}`)) :
          Effect.fail(new Error("not ready"))
      ),
      Effect.retry({
        schedule: Schedule.spaced(Duration.millis(200)),
        times: 300,
        while: (error) => error.message === "not ready"
      })
    )
    return { url, apiKey, webhookSecret, output: () => output }
  })
