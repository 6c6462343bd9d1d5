/**
 * Runs the examples: `pnpm example <name>`, `pnpm example --all` (every example in turn; exits 1
 * if one fails), `pnpm example --list`.
 *
 * The examples read their configuration from the GCX_* variables, as a real program would. When
 * none of them is set, this runner starts a sandbox in its own process (time scale
 * GCX_SANDBOX_TIME_SCALE, default 0.25, so that waiting adds little) and points the GCX_*
 * variables of each example at it, with the sandbox's public test partner.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { ExchangeConfig } from "@gcx/http"
import { Sandbox } from "@gcx/sandbox"
import { Config, Console, Duration, Effect } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { randomBytes } from "node:crypto"
import { fileURLToPath } from "node:url"

/** Every example, in the order `--all` runs them. */
const examples = [
  "heartbeat",
  "quote",
  "progress-stream",
  "subscribe-all",
  "batch",
  "resume",
  "custom-schedule",
  "error-handling",
  "observability",
  "durable",
  "cluster"
] as const

const root = fileURLToPath(new URL("..", import.meta.url))

/**
 * Runs one example in its own process, its output passed through; returns its exit code. A run
 * past 2 minutes is interrupted, which kills the process.
 */
const runExample = Effect.fn("runExample")(function*(name: string, env: Record<string, string>) {
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  return yield* spawner.exitCode(
    ChildProcess.make(process.execPath, ["--import", "tsx", `examples/${name}.ts`], {
      cwd: root,
      env: { ...dataKey, ...env },
      extendEnv: true,
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit"
    })
  ).pipe(
    Effect.timeoutOrElse({
      duration: Duration.minutes(2),
      orElse: () => Effect.fail(`${name} took more than 2 minutes`)
    })
  )
})

/**
 * `GCX_DATA_KEY` for the durable examples when it is not set: a throwaway key, as their database
 * is a throwaway file too.
 */
const dataKey: Record<string, string> = (process.env.GCX_DATA_KEY ?? "").trim() === ""
  ? { GCX_DATA_KEY: randomBytes(32).toString("base64") }
  : {}

/** The variables for the examples: the environment's, or an embedded sandbox's when none is set. */
const connection = Effect.gen(function*() {
  const configured = ExchangeConfig.variables.some((name) => (process.env[name] ?? "").trim() !== "")
  if (configured) return {}
  const timeScale = yield* Config.Number("GCX_SANDBOX_TIME_SCALE").pipe(Config.withDefault(0.25))
  // A quiet sandbox: the examples' output stays their own.
  const server = yield* Sandbox.make({ logLevel: "None", timeScale })
  yield* Console.error(
    `example: no GCX_* variables set, so the examples run against a sandbox at ${server.baseUrl} (time scale ${timeScale})`
  )
  return Sandbox.environment(server)
})

const seconds = (duration: Duration.Duration) => `${(Duration.toMillis(duration) / 1000).toFixed(1)} s`

const usage = `usage: pnpm example <name> | --all | --list\nexamples: ${examples.join(", ")}`

const main = Effect.gen(function*() {
  const [argument] = process.argv.slice(2).filter((arg) => arg !== "--")
  if (argument === "--list") return yield* Console.log(examples.join("\n"))
  const names = argument === "--all" ? examples : examples.filter((name) => name === argument)
  if (names.length === 0) {
    yield* Console.error(argument === undefined ? usage : `unknown example "${argument}"\n${usage}`)
    return yield* Effect.sync(() => {
      process.exitCode = 2
    })
  }
  const env = yield* connection
  const failed: Array<string> = []
  for (const name of names) {
    if (names.length > 1) yield* Console.log(`\n── ${name} ──`)
    const [elapsed, code] = yield* Effect.timed(
      runExample(name, env).pipe(Effect.catch((error) => Console.error(String(error)).pipe(Effect.as(1))))
    )
    if (code !== 0) failed.push(name)
    if (names.length > 1) {
      yield* Console.log(
        `${code === 0 ? "✔" : "✗"} ${name} (${seconds(elapsed)})${code === 0 ? "" : `: exit code ${code}`}`
      )
    } else if (code !== 0) {
      yield* Console.error(`${name} exited with code ${code}`)
    }
  }
  if (names.length > 1) {
    yield* Console.log(`\n${names.length - failed.length} of ${names.length} examples passed`)
  }
  if (failed.length > 0) {
    yield* Effect.sync(() => {
      process.exitCode = 1
    })
  }
})

main.pipe(
  Effect.scoped,
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
