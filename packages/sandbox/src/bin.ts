/**
 * `pnpm sandbox`: runs the sandbox (default 127.0.0.1:4010), prints its URLs
 * and the test credentials, and stops cleanly on SIGINT or SIGTERM: the
 * servers close and the process exits with code 0, with nothing on stderr.
 * Bad arguments exit with code 2 and the usage on stderr.
 *
 * Run it with `tsx packages/sandbox/src/bin.ts [options]`; `--help` lists the
 * options.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Args from "./internal/args.js"
import * as Sandbox from "./Sandbox.js"

const main = Either.match(Args.parse(process.argv.slice(2)), {
  onLeft: (problem) =>
    Effect.zipRight(
      Console.error(`${problem}\n\n${Args.usage}`),
      Effect.sync(() => {
        process.exitCode = 2
      })
    ),
  onRight: (options) =>
    options === "help"
      ? Console.log(Args.usage)
      : Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* Console.log(Sandbox.banner(server))
        return yield* Effect.never
      }).pipe(Effect.provide(Sandbox.layer(options)))
})

NodeRuntime.runMain(main)
