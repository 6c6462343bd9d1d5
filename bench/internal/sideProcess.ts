/**
 * A bench side in a process of its own, driven over its stdin and stdout: the
 * parent writes one command per line, and the side answers each, in order,
 * with one line `RESULT <json>`. Each side gets its own V8 heap and JIT, as
 * in an application that runs one of them (sides hosted in one process made
 * Effect's hot paths polymorphic over all of them, and shared one collector).
 */
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as Readline from "node:readline"
import * as Affinity from "./affinity.js"
import * as Cpu from "./cpu.js"
import { rootDir } from "./paths.js"

/** A side's process: `send` writes one command and resolves with the side's answer to it. */
export interface SideProcess {
  readonly send: <A>(command: string) => Promise<A>
  /**
   * Stops the process (SIGSTOP) until `resume` (SIGCONT): a side with work of
   * its own in the background (a cluster runner polls its storage) then takes
   * no CPU while another side is measured.
   */
  readonly pause: () => void
  readonly resume: () => void
}

/** What a side reports of one measured run: its wall time, its process's CPU time, and the quotes that failed. */
export interface SideRun {
  readonly wallMillis: number
  readonly cpuMillis: number
  readonly failures: number
}

/** A run's figures per quote: `quotes` in `run`, and a server's CPU milliseconds before and after it, when known. */
export const perQuote = (
  run: SideRun,
  quotes: number,
  serverBefore: number | undefined,
  serverAfter: number | undefined
) => ({
  quotesPerSecond: (quotes * 1000) / run.wallMillis,
  clientCpuMillisPerQuote: run.cpuMillis / quotes,
  serverCpuMillisPerQuote: serverBefore === undefined || serverAfter === undefined
    ? undefined
    : (serverAfter - serverBefore) / quotes,
  failures: run.failures
})

/** Runs `run` (which resolves with its failures) and reports it as a side does: wall time and this process's CPU. */
export const measureRun = async (run: () => Promise<number>): Promise<SideRun> => {
  const measured = await Cpu.measure(undefined, run)
  return { wallMillis: measured.wallMillis, cpuMillis: measured.clientCpuMillis, failures: measured.value }
}

const resultPrefix = "RESULT "

/** How long a side may take to release what it holds (a runner its shards) once told to stop. */
const stopMillis = 15_000

/**
 * Starts `script` (TypeScript, run with tsx) with `args`, on CPU `cpu` when
 * given. When the scope closes its stdin is closed, so that it releases what
 * it holds (a runner leaves its cluster) and exits; it is killed if it has
 * not within 15 s. `label` names it in errors.
 */
export const spawn = (label: string, script: string, args: ReadonlyArray<string>, cpu: number | undefined) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const [command, commandArgs] = Affinity.onCpu(cpu, process.execPath, ["--import", "tsx", script, ...args])
      return ChildProcess.spawn(command, commandArgs, { cwd: rootDir, stdio: ["pipe", "pipe", "pipe"] })
    }),
    (child) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          child.kill("SIGCONT")
          const timer = setTimeout(() => child.kill("SIGKILL"), stopMillis)
          child.once("exit", () => {
            clearTimeout(timer)
            resolve()
          })
          child.stdin.end()
        })
      )
  ).pipe(Effect.map((child): SideProcess => {
    const waiting: Array<{ resolve: (answer: unknown) => void; reject: (error: Error) => void }> = []
    let exited: Error | undefined
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)))
    Readline.createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith(resultPrefix)) waiting.shift()?.resolve(JSON.parse(line.slice(resultPrefix.length)))
    })
    child.once("exit", (code) => {
      exited = new Error(`the ${label} side exited (${code}): ${stderr}`)
      for (const waiter of waiting.splice(0)) waiter.reject(exited)
    })
    const signal = (name: NodeJS.Signals) => () => {
      if (exited === undefined) child.kill(name)
    }
    return {
      pause: signal("SIGSTOP"),
      resume: signal("SIGCONT"),
      send: <A>(command: string) =>
        new Promise<A>((resolve, reject) => {
          if (exited !== undefined) return reject(exited)
          waiting.push({ resolve: resolve as (answer: unknown) => void, reject })
          child.stdin.write(`${command}\n`)
        })
    }
  }))

/**
 * The side's half: answers each line of stdin with `answer(line)`, one at a
 * time and in order, and calls `close` when stdin closes, then exits. A failed answer
 * ends the process with its error on stderr (the parent reports it).
 */
export const serve = (answer: (line: string) => Promise<unknown>, close: () => Promise<void>): void => {
  let queue = Promise.resolve()
  const fail = (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
    process.exit(1)
  }
  const lines = Readline.createInterface({ input: process.stdin })
  lines.on("close", () => {
    queue = queue.then(close).then(() => process.exit(0)).catch(fail)
  })
  lines.on("line", (line) => {
    queue = queue.then(async () => {
      process.stdout.write(`${resultPrefix}${JSON.stringify(await answer(line))}\n`)
    }).catch(fail)
  })
}
