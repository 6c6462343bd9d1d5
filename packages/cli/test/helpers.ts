/**
 * Runs `gcx` as a separate process, as a user would, and checks what it printed.
 */
import { expect } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import * as Url from "node:url"

/** The repository root: every process runs there, as `pnpm gcx` does. */
export const root = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../../..")

/** The entry points. */
export const entries = {
  bin: "packages/cli/src/bin.ts",
  demo: "packages/cli/src/demo.ts",
  executable: "packages/cli/bin/gcx.mjs"
} as const

/** What a process printed and how it ended. */
export interface Output {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of the tests without any GCX_* variable, plus `env`. */
export const environment = (env: Record<string, string> = {}): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("GCX_") && name !== "NO_COLOR" && value !== undefined) out[name] = value
  }
  return { ...out, ...env }
}

/** Runs a command line to its end (killed after `timeout` ms). */
export const spawn = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly timeout?: number } = {}
): Effect.Effect<Output> =>
  Effect.async<Output>((resume) => {
    const child = ChildProcess.spawn(command, args, {
      cwd: root,
      env: environment(options.env),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeout ?? 60_000)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, signal, stdout, stderr }))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })

/** Runs `gcx <args>` (the TypeScript entry, as `pnpm gcx` does) and checks that its output holds no secret. */
export const gcx = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly timeout?: number } = {}
): Effect.Effect<Output> =>
  spawn(process.execPath, ["--import", "tsx", entries.bin, ...args], options).pipe(Effect.tap(expectNoSecrets))

/** The PIN the tests send: distinctive, so that finding it anywhere in the output is a leak. */
export const pin = "Pin-7391-secret"

/** Every full card number of the sandbox's scenarios. */
export const cardNumbers: ReadonlyArray<string> = Object.values(TestData.Cards)

/**
 * Checks that an output holds no secret: no test PIN, no full card number,
 * no client secret or API key, no bearer token (a JWT starts with `eyJ`),
 * and no stack trace.
 */
export const expectNoSecrets = (output: Output): void => {
  const text = `${output.stdout}\n${output.stderr}`
  const secrets = [pin, ...cardNumbers, TestData.partner.clientSecret, TestData.partner.apiKey, "eyJ", "Bearer "]
  for (const secret of secrets) expect(text, `the output holds ${secret}`).not.toContain(secret)
  expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/)
}

/** The GCX_* variables that point gcx at a sandbox, with its default test partner. */
export const envFor = (server: Sandbox.Service): Record<string, string> => Sandbox.environment(server)

/** A quiet sandbox on a free port, in the test process. */
export const sandbox = (options: Sandbox.SandboxOptions = {}) => Sandbox.layer({ logLevel: "None", ...options })

/** The lines of a text, without the empty ones. */
export const lines = (text: string): Array<string> => text.split("\n").filter((line) => line.trim() !== "")

/** Card flags for a scenario card and the test PIN. */
export const cardArgs = (cardNumber: string, product: string = TestData.defaultProductLineId) => [
  "--card",
  cardNumber,
  "--pin",
  pin,
  "--product",
  product
]
