/**
 * The `gcx` command: its subcommands, and `main`, which runs it on the
 * command line and turns every way it can end into an exit code (see
 * `ExitCode`), reporting a failure as one line on stderr.
 */
import type * as CliApp from "@effect/cli/CliApp"
import * as Command from "@effect/cli/Command"
import type * as Effect from "effect/Effect"
import * as Batch from "./commands/Batch.js"
import * as Heartbeat from "./commands/Heartbeat.js"
import * as Quote from "./commands/Quote.js"
import * as RunnerCommand from "./commands/Runner.js"
import * as SandboxCommand from "./commands/SandboxCommand.js"
import * as Watch from "./commands/Watch.js"
import * as ExitCode from "./ExitCode.js"

/** The version `gcx --version` prints. */
export const version = "0.1.0"

/** The `gcx` command and its subcommands. */
export const command = Command.make("gcx").pipe(
  Command.withDescription("Quote gift cards with the Gift Card Exchange Partner Service"),
  Command.withSubcommands([
    Heartbeat.command,
    Quote.command,
    Watch.command,
    Batch.command,
    SandboxCommand.command,
    RunnerCommand.command
  ])
)

/** Runs `gcx` on the full command line (`process.argv`: runtime, script, arguments). */
export const cli = Command.run(command, { name: "gcx", version })

/** Runs `gcx` and returns its exit code; a failure is reported as one line on stderr (`ExitCode.report`). */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<ExitCode.ExitCode, never, CliApp.CliApp.Environment> =>
  ExitCode.report(cli(argv))
