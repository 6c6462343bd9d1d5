/**
 * `tsx packages/workflow/test/utils/with-postgres.ts <command> [args...]`: runs a command with
 * `GCX_DATABASE_URL` set to a throwaway PostgreSQL (see `postgres.ts`), removed when the command
 * ends; exits with the command's code. `.ci/run` runs the examples this way, so that
 * `examples/cluster.ts` runs its runner on a real PostgreSQL in CI.
 */
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Postgres from "./postgres.js"

const [command, ...args] = process.argv.slice(2).filter((arg) => arg !== "--")

const program = Effect.gen(function*() {
  if (command === undefined) {
    yield* Effect.sync(() => console.error("usage: with-postgres.ts <command> [args...]"))
    return 2
  }
  const database = yield* Postgres.make()
  return yield* Effect.callback<number>((resume) => {
    const child = ChildProcess.spawn(command, args, {
      stdio: "inherit",
      env: { ...process.env, GCX_DATABASE_URL: database.urlString }
    })
    child.once("error", (error) => {
      console.error(`with-postgres: ${command}: ${error.message}`)
      resume(Effect.succeed(127))
    })
    child.once("exit", (code, signal) => resume(Effect.succeed(code ?? (signal === null ? 1 : 128))))
  })
})

Effect.runPromise(Effect.scoped(program)).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error(`with-postgres: ${error instanceof Error ? error.message : String(error)}`)
    process.exitCode = 1
  }
)
