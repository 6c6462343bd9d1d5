/**
 * Bench rows that measure memory run their side in a child process of its own (`--expose-gc`) and
 * read the one `RESULT <json>` line it prints.
 */
import * as ChildProcess from "node:child_process"
import * as Affinity from "./affinity.js"
import { rootDir } from "./paths.js"

/**
 * Runs `node --expose-gc --import tsx <script> ...args` from the repository's root and resolves with
 * the JSON of its `RESULT ` line; rejects, naming `label` and the end of its stderr, when it exits
 * without one.
 */
export const resultOf = <A>(
  label: string,
  script: string,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = process.env
): Promise<A> =>
  new Promise((resolve, reject) => {
    const child = ChildProcess.spawn(process.execPath, ["--expose-gc", "--import", "tsx", script, ...args], {
      cwd: rootDir,
      stdio: ["ignore", "pipe", "pipe"],
      env
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)))
    child.once("exit", (code) => {
      const line = stdout.split("\n").find((candidate) => candidate.startsWith("RESULT "))
      if (line === undefined) reject(new Error(`the ${label} child exited (${code}) without a result: ${stderr}`))
      else resolve(JSON.parse(line.slice("RESULT ".length)) as A)
    })
  })

/** A child that reports steps as lines and waits for the parent's word between them (`interactive`). */
export interface Interactive {
  /** The rest of the next line that starts with `prefix ` (or is `prefix`), once it is printed. */
  readonly expect: (prefix: string) => Promise<string>
  /** Writes a line to the child's stdin. */
  readonly send: (line: string) => void
  /** Kills the child (SIGKILL) if it is still running; resolves once it has exited. */
  readonly stop: () => Promise<void>
}

/**
 * Runs `node --import tsx <script> ...args` from the repository's root with a
 * line protocol: the child prints `STEP [json]` lines, the parent answers on
 * stdin. `expect` rejects, naming `label` and the end of its stderr, when the
 * child exits first. On CPU `cpu` when given (`Affinity.onCpu`).
 */
export const interactive = (
  label: string,
  script: string,
  args: ReadonlyArray<string>,
  cpu?: number | undefined
): Interactive => {
  const [command, commandArgs] = Affinity.onCpu(cpu, process.execPath, ["--import", "tsx", script, ...args])
  const child = ChildProcess.spawn(command, commandArgs, { cwd: rootDir, stdio: ["pipe", "pipe", "pipe"] })
  const lines: Array<string> = []
  const waiting: Array<() => void> = []
  let stdout = ""
  let stderr = ""
  let exit: string | undefined
  const wake = () => waiting.splice(0).forEach((resume) => resume())
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString()
    const parts = stdout.split("\n")
    stdout = parts.pop()!
    for (const line of parts) lines.push(line)
    wake()
  })
  child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)))
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      exit = String(code ?? signal)
      wake()
      resolve()
    })
  )
  const expect = async (prefix: string): Promise<string> => {
    for (;;) {
      const index = lines.findIndex((line) => line === prefix || line.startsWith(`${prefix} `))
      if (index >= 0) return lines.splice(0, index + 1).at(-1)!.slice(prefix.length + 1)
      if (exit !== undefined) throw new Error(`the ${label} child exited (${exit}) before ${prefix}: ${stderr}`)
      await new Promise<void>((resume) => waiting.push(resume))
    }
  }
  return {
    expect,
    send: (line) => child.stdin.write(`${line}\n`),
    stop: async () => {
      if (exit === undefined) child.kill("SIGKILL")
      await exited
    }
  }
}
