/**
 * `pnpm sandbox`: runs the sandbox (default 127.0.0.1:4010), prints its URLs
 * and the test credentials, and stops cleanly on SIGINT or SIGTERM: the
 * servers close and the process exits with code 0, with nothing on stderr.
 * Bad arguments exit with code 2 and the usage on stderr; options that
 * cannot work (`--host 0.0.0.0` without an admin key) and a port it cannot
 * listen on (in use, not permitted) exit with code 2 and one `error:` line.
 * The admin key is `--admin-key`, else `GCX_SANDBOX_ADMIN_KEY`, else random.
 *
 * It is the package's `gcx-sandbox` bin (`npx @gcx/sandbox`, through
 * `bin/gcx-sandbox.mjs`); in the repository, `pnpm sandbox` runs it with tsx.
 * `--help` lists the options.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as ListenFailure from "@gcx/core/ListenFailure"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { ServeError } from "effect/http/HttpServerError"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Runtime from "effect/Runtime"
import * as Args from "./internal/args.js"
import * as Sandbox from "./Sandbox.js"

const exitWithUsageCode = Effect.sync(() => {
  process.exitCode = 2
})

/** One line for a server that could not listen: the address and the system's reason, never a stack trace. */
const describeServeError = (error: ServeError): string =>
  `error: the sandbox cannot listen${ListenFailure.describe(error.cause)}`

const main = Result.match(Args.parse(process.argv.slice(2)), {
  onFailure: (problem) =>
    Effect.andThen(
      Console.error(`${problem}\n\n${Args.usage}`),
      exitWithUsageCode
    ),
  onSuccess: (options) =>
    options === "help"
      ? Console.log(Args.usage)
      : Effect.gen(function*() {
        // An environment variable is read or missing (None): reading it cannot fail.
        const fromEnvironment = yield* Effect.orDie(Sandbox.adminKeyConfig)
        const adminKey = options.adminKey ?? Option.getOrUndefined(fromEnvironment)
        const server = yield* Sandbox.make({ ...options, adminKey })
        yield* Console.log(Sandbox.banner(server))
        return yield* Effect.never
      }).pipe(
        Effect.scoped,
        Effect.catchTags({
          ServeError: (error) => Effect.andThen(Console.error(describeServeError(error)), exitWithUsageCode),
          SandboxOptionsError: (error) => Effect.andThen(Console.error(`error: ${error.message}`), exitWithUsageCode)
        })
      )
})

/**
 * A stop by SIGINT or SIGTERM (an interruption, and nothing else) is the
 * normal end of a server: exit code 0, where Effect's default is 130.
 */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

NodeRuntime.runMain(main, { teardown })
