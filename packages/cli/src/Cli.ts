/**
 * The `gcx` command: its subcommands, and `main`, which runs it on the
 * command line and turns every way it can end into an exit code (see
 * `ExitCode`), reporting a failure as one line on stderr.
 */
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import * as Batch from "./commands/Batch.js"
import * as Heartbeat from "./commands/Heartbeat.js"
import * as Quote from "./commands/Quote.js"
import * as Result from "./commands/Result.js"
import * as RunnerCommand from "./commands/Runner.js"
import * as SandboxCommand from "./commands/SandboxCommand.js"
import * as Serve from "./commands/Serve.js"
import * as Watch from "./commands/Watch.js"
import * as ExitCode from "./ExitCode.js"
import * as Help from "./Help.js"
import * as Output from "./Output.js"
import * as Telemetry from "./Telemetry.js"

/** The version `gcx --version` prints. */
export const version = "0.1.0"

/** The `gcx` command and its subcommands. */
export const command = Command.make("gcx").pipe(
  Help.describe("Quote gift cards with the Gift Card Exchange Partner Service", [
    ...Help.connectionVariables,
    ["GCX_BATCH_KEY", "key of gcx batch's results file (see gcx batch --help)"]
  ]),
  Command.withSubcommands([
    Heartbeat.command,
    Quote.command,
    Watch.command,
    Batch.command,
    Result.command,
    SandboxCommand.command,
    RunnerCommand.command,
    Serve.command
  ])
)

/** Runs `gcx` on the full command line (`process.argv`: runtime, script, arguments). */
export const cli = (argv: ReadonlyArray<string>) => Command.runWith(command, { version })(argv.slice(2))

/** The services `main` needs from the platform: those of effect/cli (`NodeServices.layer` on Node). */
export type Environment = Command.Environment

/**
 * Runs `gcx` and returns its exit code; a failure is reported as one line on
 * stderr (`ExitCode.report`). Output follows `Output`: logs on stderr,
 * colours only on a terminal without `NO_COLOR`, `--log-level` anywhere.
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` set, its spans and metrics are exported,
 * and flushed before it returns (`Telemetry`).
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<ExitCode.ExitCode, never, Environment> =>
  ExitCode.report(
    cli(Output.hoistLogLevel(argv)).pipe(Effect.provide(Telemetry.layer), Help.provide(Output.colors(process.stdout))),
    Help.commandOf(argv)
  ).pipe(Output.provide(argv))
