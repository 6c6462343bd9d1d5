/**
 * The bench's host processes (`sandbox-host.ts`, `otlp-host.ts`): a child
 * process that prints `READY <text>` on one line when it serves, and runs
 * until stopped; stopped at the end, also when the caller fails or the bench
 * process exits.
 */
import * as ChildProcess from "node:child_process"
import * as Affinity from "./affinity.js"
import { rootDir } from "./paths.js"

/** Settings of a host process. */
export interface Options {
  /** The one CPU it runs on (`affinity.ts`); default: wherever the kernel puts it. */
  readonly cpu?: number | undefined
}

/** A running host process. */
export interface Started {
  readonly pid: number
  /** The text after `READY `. */
  readonly ready: string
  /** Stops the process: SIGTERM, then SIGKILL if it has not exited after 5 s. */
  readonly stop: () => Promise<void>
}

const live = new Set<ChildProcess.ChildProcess>()
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL")
})

/** Starts `script` (TypeScript, through tsx) with `args`, and waits for its `READY` line (60 s at most). */
export const start = (
  name: string,
  script: string,
  args: ReadonlyArray<string>,
  options: Options = {}
): Promise<Started> =>
  new Promise((resolve, reject) => {
    const [command, argv] = Affinity.onCpu(options.cpu, process.execPath, ["--import", "tsx", script, ...args])
    const child = ChildProcess.spawn(command, argv, { cwd: rootDir, stdio: ["ignore", "pipe", "pipe"] })
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
      reject(new Error(`${name} did not start within 60 s: ${stderr}`))
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
      resolve({ pid: child.pid!, ready: line.slice("READY ".length), stop })
    })
    child.once("exit", (code, signal) => {
      live.delete(child)
      if (!ready) {
        clearTimeout(timeout)
        reject(new Error(`${name} exited (${code ?? signal}) before it was ready: ${stderr}`))
      }
    })
  })
