/**
 * The child processes of the multi-runner proof: the sandbox host (bench's `sandbox-host.ts`) and
 * cluster runners (`runner-process.ts`), each read from its stdout lines, killed with the process
 * if the test dies.
 */
import type { Faults, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as path from "node:path"
import * as url from "node:url"

/** The repository root. */
export const rootDir = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), "../../../..")

const live = new Set<ChildProcess.ChildProcess>()
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL")
})

/** A child process read line by line. */
export interface Child {
  readonly process: ChildProcess.ChildProcess
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>
  /** The tail of its stderr, for error messages. */
  readonly stderr: () => string
}

/** Spawns `node --import tsx script`, calling `onLine` per stdout line; resolves at the first line `ready` accepts. */
const spawn = <A>(
  script: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  onLine: (line: string) => void,
  ready: (line: string) => A | undefined
): Promise<{ readonly child: Child; readonly value: A }> =>
  new Promise((resolve, reject) => {
    const proc = ChildProcess.spawn(process.execPath, ["--import", "tsx", script, ...args], {
      cwd: rootDir,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    live.add(proc)
    let stderr = ""
    let buffer = ""
    let done = false
    const exited = new Promise<void>((resolveExit) =>
      proc.once("exit", () => {
        live.delete(proc)
        resolveExit()
      })
    )
    const child: Child = { process: proc, exited, stderr: () => stderr }
    const timer = setTimeout(() => {
      proc.kill("SIGKILL")
      reject(new Error(`${path.basename(script)} did not start within 90 s: ${stderr}`))
    }, 90_000)
    proc.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-8_000)
    })
    proc.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString()
      let newline: number
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 1)
        // other lines (logs, errors printed by the runtime) are kept with stderr for error messages
        if (!line.startsWith("EVENT ")) stderr = (stderr + line + "\n").slice(-8_000)
        onLine(line)
        if (!done) {
          const value = ready(line)
          if (value !== undefined) {
            done = true
            clearTimeout(timer)
            resolve({ child, value })
          }
        }
      }
    })
    proc.once("exit", (code, signal) => {
      if (!done) {
        clearTimeout(timer)
        reject(new Error(`${path.basename(script)} exited (${code ?? signal}) before it was ready: ${stderr}`))
      }
    })
  })

/** The address of a sandbox in the host process. */
export interface Endpoint {
  readonly baseUrl: string
  readonly authUrl: string
  readonly stage: string
  readonly adminKey: string
}

/** Settings of the sandbox process. */
export interface SandboxSettings {
  readonly timeScale: number
  readonly faults: ReadonlyArray<Faults.FaultRule>
  readonly partners: ReadonlyArray<TestData.Partner>
}

/** The sandbox in a process of its own for the life of the scope. */
export const sandbox = (settings: SandboxSettings) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      spawn(
        path.join(rootDir, "bench/internal/sandbox-host.ts"),
        [JSON.stringify([{ ...settings, seed: 12, logLevel: "None" }])],
        {},
        () => undefined,
        (line) => line.startsWith("READY ") ? (JSON.parse(line.slice(6)) as ReadonlyArray<Endpoint>)[0] : undefined
      )
    ),
    ({ child }) => stop(child)
  ).pipe(Effect.map(({ value }) => value))

/** Stops a child: SIGTERM, then SIGKILL after `graceMillis`. */
export const stop = (child: Child, graceMillis = 20_000) =>
  Effect.promise(async () => {
    if (child.process.exitCode !== null || child.process.signalCode !== null) return
    child.process.kill("SIGTERM")
    const timer = setTimeout(() => child.process.kill("SIGKILL"), graceMillis)
    await child.exited
    clearTimeout(timer)
  })

/** One event line of a runner: `EVENT <tag> <transactionId> <requestId|-> <epoch ms>`. */
export interface EventLine {
  readonly runner: number
  readonly tag: string
  readonly transactionId: string
  readonly requestId: string | undefined
  readonly at: number
}

/** Starts runner `index` on `port`; its event lines go to `onEvent`, every line to `onLine`. */
export const runner = (
  index: number,
  port: number,
  env: Record<string, string>,
  onEvent: (event: EventLine) => void,
  onLine: (line: string) => void = () => undefined
): Promise<Child> =>
  spawn(
    path.join(rootDir, "packages/workflow/test/cluster/runner-process.ts"),
    [],
    { ...env, GCX_RUNNER_ADDRESS: `127.0.0.1:${port}` },
    (line) => {
      onLine(line)
      if (!line.startsWith("EVENT ")) return
      const [, tag, transactionId, requestId, at] = line.split(" ")
      onEvent({
        runner: index,
        tag: tag!,
        transactionId: transactionId!,
        requestId: requestId === "-" ? undefined : requestId,
        at: Number(at)
      })
    },
    (line) => (line === "READY" ? true : undefined)
  ).then(({ child }) => child)
