/**
 * Processes for the install test: run to the end, side by side, or left running as a service;
 * always with the environment of a user's shell unless told otherwise.
 */
import * as ChildProcess from "node:child_process"
import * as Net from "node:net"
import * as Path from "node:path"
import * as Url from "node:url"

/** The repository root. */
export const root = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../..")

/** What a finished process printed and how it ended. */
export interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly millis: number
}

/**
 * The environment of a user's shell: without the `@gcx/source` condition that pnpm puts in
 * `NODE_OPTIONS` inside this repository, and without the `npm_*` variables pnpm sets for scripts.
 */
export const userEnvironment = (extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name === "NODE_OPTIONS" || name.toLowerCase().startsWith("npm_")) continue
    if (name === "PNPM_SCRIPT_SRC_DIR" || name === "INIT_CWD") continue
    env[name] = value
  }
  return { ...env, ...extra }
}

/** Runs a command to its end (killed after `timeout` ms), with the user's environment unless `env` is given. */
export const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Record<string, string>; readonly timeout?: number } = {}
): Result => {
  const started = performance.now()
  const result = ChildProcess.spawnSync(command, args, {
    cwd: options.cwd ?? root,
    env: options.env ?? userEnvironment(),
    encoding: "utf8",
    timeout: options.timeout ?? 120_000,
    maxBuffer: 64 * 1024 * 1024
  })
  return {
    code: result.status,
    stdout: result.stdout ?? "",
    stderr: (result.stderr ?? "") + (result.error === undefined ? "" : `\n${result.error.message}`),
    millis: performance.now() - started
  }
}

/** Like `run`, without blocking: for the slow checks that run side by side. */
export const start = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Record<string, string>; readonly timeout?: number } = {}
): Promise<Result> =>
  new Promise((resolve) => {
    const started = performance.now()
    const child = ChildProcess.spawn(command, args, {
      cwd: options.cwd ?? root,
      env: options.env ?? userEnvironment(),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: options.timeout ?? 120_000
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", (error) => (stderr += `\n${error.message}`))
    child.on("close", (code) => resolve({ code, stdout, stderr, millis: performance.now() - started }))
  })

/** A port free on 127.0.0.1 at the time of the call. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** A process left running: what it printed so far, and how to stop it. */
export interface Service {
  readonly output: () => string
  /**
   * Sends SIGTERM (SIGINT to the whole group, as Ctrl+C does, for a `processGroup`) and resolves
   * when it has exited and closed its output; a group still running after 15 s gets SIGKILL.
   */
  readonly stop: () => Promise<Result>
}

/**
 * Starts a long-running process and resolves once its output (stdout and stderr) matches `ready`;
 * rejects, with what it printed, when it exits first or after `timeout` ms. With `processGroup`,
 * it runs in a process group of its own, stopped as a whole: for a launcher such as `npx`, which
 * does not pass a signal on to the program it runs.
 */
export const startService = (
  command: string,
  args: ReadonlyArray<string>,
  ready: RegExp,
  options: {
    readonly cwd?: string
    readonly env?: Record<string, string>
    readonly timeout?: number
    readonly processGroup?: boolean
  } = {}
): Promise<Service> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = ChildProcess.spawn(command, args, {
      cwd: options.cwd ?? root,
      env: options.env ?? userEnvironment(),
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.processGroup === true
    })
    let stdout = ""
    let stderr = ""
    let settled = false
    // "close": every process holding its output (the group's included) has ended
    const exited = new Promise<Result>((done) =>
      child.on("close", (code) => done({ code, stdout, stderr, millis: performance.now() - started }))
    )
    const signalGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal)
      } catch {
        // the group has ended
      }
    }
    const service: Service = {
      output: () => stdout + stderr,
      stop: () => {
        if (options.processGroup === true && child.pid !== undefined) {
          signalGroup("SIGINT")
          const kill = setTimeout(() => signalGroup("SIGKILL"), 15_000)
          return exited.finally(() => clearTimeout(kill))
        }
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
        return exited
      }
    }
    const timer = setTimeout(() => {
      if (settled) return
      settled = true
      void service.stop()
      reject(new Error(`not ready after ${options.timeout ?? 60_000} ms:\n${service.output().trim()}`))
    }, options.timeout ?? 60_000)
    const onData = () => {
      if (settled || !ready.test(stdout + stderr)) return
      settled = true
      clearTimeout(timer)
      resolve(service)
    }
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      onData()
    })
    child.stderr.on("data", (chunk) => {
      stderr += chunk
      onData()
    })
    child.on("error", (error) => (stderr += `\n${error.message}`))
    void exited.then((result) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      reject(new Error(`exited ${result.code} before it was ready:\n${service.output().trim()}`))
    })
  })
