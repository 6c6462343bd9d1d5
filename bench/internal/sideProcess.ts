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

/**
 * A side's process: `send` writes one command and resolves with the side's
 * answer to it, or rejects when the side exits, fails, or has not answered
 * within `timeoutMillis` (10 minutes unless given; the side is then killed,
 * since its later answers could no longer be matched to their commands).
 */
export interface SideProcess {
  readonly send: <A>(command: string, timeoutMillis?: number) => Promise<A>
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

/** How long a command may run unless `send` is told otherwise. */
const commandMillis = 10 * 60_000

/**
 * The sides still running. A bench that ends without closing its scopes
 * (`process.exit`, an uncaught error) kills them as it exits: a side left
 * stopped (SIGSTOP) would otherwise stay, holding its database connections.
 * (SIGINT and SIGTERM interrupt the bench's main fiber, which closes them.)
 */
const running = new Set<ChildProcess.ChildProcess>()
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL")
})

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
      const child = ChildProcess.spawn(command, commandArgs, { cwd: rootDir, stdio: ["pipe", "pipe", "pipe"] })
      running.add(child)
      child.once("exit", () => running.delete(child))
      return child
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
    let failed: Error | undefined
    let stderr = ""
    /** Ends the side's use: every pending and later command rejects with `error`. */
    const fail = (error: Error) => {
      failed ??= error
      for (const waiter of waiting.splice(0)) waiter.reject(failed)
    }
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)))
    Readline.createInterface({ input: child.stdout }).on("line", (line) => {
      if (!line.startsWith(resultPrefix)) return
      let answer: unknown
      try {
        answer = JSON.parse(line.slice(resultPrefix.length))
      } catch (error) {
        return fail(new Error(`the ${label} side answered what is not JSON: ${String(error)}`))
      }
      waiting.shift()?.resolve(answer)
    })
    child.once("exit", (code, signal) => fail(new Error(`the ${label} side exited (${code ?? signal}): ${stderr}`)))
    // a side that could not start, or could not be signalled
    child.on("error", (error) => fail(new Error(`the ${label} side failed: ${error.message}`)))
    // a write to a side that has exited (EPIPE): its exit says why
    child.stdin.on("error", () => {})
    const signal = (name: NodeJS.Signals) => () => {
      if (failed === undefined) child.kill(name)
    }
    return {
      pause: signal("SIGSTOP"),
      resume: signal("SIGCONT"),
      send: <A>(command: string, timeoutMillis = commandMillis) =>
        new Promise<A>((resolve, reject) => {
          if (failed !== undefined) return reject(failed)
          const timer = setTimeout(() => {
            fail(new Error(`the ${label} side did not answer "${command}" within ${timeoutMillis} ms`))
            child.kill("SIGKILL")
          }, timeoutMillis)
          const settle = <T>(then: (value: T) => void) => (value: T) => {
            clearTimeout(timer)
            then(value)
          }
          waiting.push({ resolve: settle(resolve as (answer: unknown) => void), reject: settle(reject) })
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
