/**
 * Sandboxes in a separate process (`sandbox-host.ts`): started with their
 * options, read from the `READY` line, and stopped at the end, also when the
 * caller fails or the bench process exits.
 */
import type { Sandbox } from "@gcx/sandbox"
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import { inBench, rootDir } from "./paths.js"

/** The address of one running sandbox. */
export interface Endpoint {
  readonly baseUrl: string
  readonly authUrl: string
  readonly stage: string
  readonly adminKey: string
}

/** A running host process and the sandboxes it serves. */
export interface SandboxProcess {
  readonly pid: number
  readonly endpoints: ReadonlyArray<Endpoint>
  /** The first (often the only) sandbox. */
  readonly endpoint: Endpoint
  /** Stops the process: SIGTERM, then SIGKILL if it has not exited after 5 s. */
  readonly stop: () => Promise<void>
}

const live = new Set<ChildProcess.ChildProcess>()
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL")
})

const host = inBench("internal", "sandbox-host.ts")

/** Starts one host process serving a sandbox per entry of `options`. */
export const start = (options: ReadonlyArray<Sandbox.SandboxOptions> = [{}]): Promise<SandboxProcess> =>
  new Promise((resolve, reject) => {
    const child = ChildProcess.spawn(process.execPath, ["--import", "tsx", host, JSON.stringify(options)], {
      cwd: rootDir,
      stdio: ["ignore", "pipe", "pipe"]
    })
    live.add(child)
    let buffer = ""
    let stderr = ""
    let ready = false
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM")
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
        await exited
        clearTimeout(timer)
      }
      live.delete(child)
    }
    const timeout = setTimeout(() => {
      void stop()
      reject(new Error(`the sandbox host did not start within 60 s: ${stderr}`))
    }, 60_000)
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4_000)
    })
    child.stdout.on("data", (chunk: Buffer) => {
      if (ready) return
      buffer += chunk.toString()
      const line = buffer.split("\n").find((candidate) => candidate.startsWith("READY "))
      if (line === undefined) return
      ready = true
      clearTimeout(timeout)
      const endpoints = JSON.parse(line.slice("READY ".length)) as ReadonlyArray<Endpoint>
      resolve({ pid: child.pid!, endpoints, endpoint: endpoints[0]!, stop })
    })
    child.once("exit", (code, signal) => {
      live.delete(child)
      if (!ready) {
        clearTimeout(timeout)
        reject(new Error(`the sandbox host exited (${code ?? signal}) before it was ready: ${stderr}`))
      }
    })
  })

/** A host process for the life of the current scope. */
export const scoped = (options: ReadonlyArray<Sandbox.SandboxOptions> = [{}]) =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => start(options), catch: (error) => error as Error }),
    (process) => Effect.promise(() => process.stop())
  )
