/**
 * The exit codes of `gcx` and the one-line report of a failure.
 *
 * | code | meaning |
 * |---|---|
 * | 0 | completed |
 * | 1 | unexpected failure inside gcx (a bug) |
 * | 2 | usage or configuration: bad flags or `GCX_*` variables, refused credentials, invalid card input, a request the service refused as malformed, a refused `--out`, a missing, wrong or weak batch key, a sealed card no data key opens, a requestId already recorded with another card (`RequestIdConflict`) |
 * | 3 | card outcome: the card was refused (show the user message to the customer) |
 * | 4 | merchant outcome: the merchant could not be reached (retry later) |
 * | 5 | service failure: the service or the network failed, or the quote did not complete in time |
 * | 130 | interrupted (Ctrl+C) |
 *
 * `gcx serve` and `gcx runner` run until stopped (`untilStopped`): stopped by
 * SIGTERM, as a process manager stops them, they exit 0 once their shutdown
 * has run cleanly.
 *
 * A report is one line on stderr: never a stack trace, a secret or a full
 * card number (the service's messages are scrubbed by @gcx/core), and no
 * control character (`Text.safe`). A usage error names the flag or the
 * variable and ends with `(see gcx <command> --help)`. The lines themselves
 * are written by `Describe`.
 */
import * as ConfigProblem from "@gcx/core/ConfigProblem"
import type * as Errors from "@gcx/core/Errors"
import * as ErrorTraits from "@gcx/core/ErrorTraits"
import * as ListenFailure from "@gcx/core/ListenFailure"
import type { JournalError } from "@gcx/poller/QuoteJournal"
import type { SandboxOptionsError } from "@gcx/sandbox/Sandbox"
import * as Cause from "effect/Cause"
import * as EffectCliError from "effect/cli/CliError"
import type * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { ServeError } from "effect/http/HttpServerError"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import * as Predicate from "effect/Predicate"
import type * as Runtime from "effect/Runtime"
import type { BatchKeyError } from "./BatchKey.js"
import * as Describe from "./Describe.js"
import * as Help from "./Help.js"
import * as Output from "./Output.js"
import * as Text from "./Text.js"

/** The exit codes of `gcx`. */
export const ExitCode = {
  Completed: 0,
  Unexpected: 1,
  Usage: 2,
  CardOutcome: 3,
  MerchantOutcome: 4,
  ServiceFailure: 5,
  Interrupted: 130
} as const

/** An exit code of `gcx`. */
export type ExitCode = typeof ExitCode[keyof typeof ExitCode]

/** A failure the CLI itself raises: bad input it found, with the code to exit with. */
export class CliError extends Data.TaggedError("CliError")<{
  readonly code: ExitCode
  readonly message: string
}> {}

/**
 * Ends a command with `code` after it has printed what it had to say (a batch
 * whose cards did not all complete); reported without a further line.
 */
export class ExitWith extends Data.TaggedError("ExitWith")<{ readonly code: ExitCode }> {}

/** Everything a command can fail with. */
export type Failure =
  | Errors.QuoteFailure
  | Config.ConfigError
  | EffectCliError.CliError
  | PlatformError.PlatformError
  | CliError
  | ExitWith
  | ServeError
  | SandboxOptionsError
  | JournalError
  | BatchKeyError

/** Whether a failure is one of the quote failures (`Errors.QuoteFailure`), by its tag. */
export const isQuoteFailure = (error: unknown): error is Errors.QuoteFailure =>
  Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" &&
  Object.prototype.hasOwnProperty.call(ErrorTraits.Traits, error._tag)

/** The exit code of a quote failure, by its recovery group. */
export const ofQuoteFailure = (error: Errors.QuoteFailure): ExitCode => {
  switch (ErrorTraits.groupOf(error)) {
    case "card":
      return ExitCode.CardOutcome
    case "merchant":
      return ExitCode.MerchantOutcome
    case "request":
      return ExitCode.Usage
    case "local":
      return error._tag === "InvalidCardInput" || error._tag === "CardDecryptionError" ||
          (error._tag === "TokenError" && error.httpStatus !== undefined && error.httpStatus >= 400 &&
            error.httpStatus < 500)
        ? ExitCode.Usage
        : ExitCode.ServiceFailure
    default:
      return ExitCode.ServiceFailure
  }
}

/**
 * The more serious of two codes, for a batch: usage, then service failure,
 * then merchant outcome, then card outcome, then completed.
 */
export const worst = (a: ExitCode, b: ExitCode): ExitCode => (rank(b) > rank(a) ? b : a)

const ranks: ReadonlyArray<ExitCode> = [
  ExitCode.Completed,
  ExitCode.CardOutcome,
  ExitCode.MerchantOutcome,
  ExitCode.ServiceFailure,
  ExitCode.Usage,
  ExitCode.Unexpected,
  ExitCode.Interrupted
]

const rank = (code: ExitCode): number => ranks.indexOf(code)

/** One line describing a quote failure: what happened, the error's tag and code, and the user message. */
export const describeQuoteFailure: (error: Errors.QuoteFailure) => string = Describe.quoteFailure

/** The messages of a configuration error, one per problem, naming the variables. */
export const describeConfigError: (error: Config.ConfigError) => string = Describe.configError

/** The problem a command-line error describes, as one line: `--deadline must be a number above 0, got 'x'`. */
export const describeUsageError: (error: EffectCliError.CliError) => string = Describe.usageError

/** `(or use --embedded for the sandbox)`, for an error about the connection settings only: the sandbox fixes no other. */
const connectionHint = (error: Config.ConfigError): string => {
  const problems = ConfigProblem.fromError(error)
  return problems.length > 0 && problems.every((problem) => Help.isConnectionVariable(problem.path))
    ? " (or use --embedded for the sandbox)"
    : ""
}

/** What a report says: the code, and the line to print (none when the failure was already reported). */
export interface Outcome {
  readonly code: ExitCode
  readonly line: Option.Option<string>
}

/** The code and the line for a failure of `command` (the subcommand, for the usage hint). */
export const ofFailure = (error: Failure, command?: string): Outcome => {
  const usage = (line: string, hinted = command) => ({
    code: ExitCode.Usage,
    line: Option.some(`${line} ${Help.hint(hinted)}`)
  })
  if (isQuoteFailure(error)) {
    const line = describeQuoteFailure(error)
    return error._tag === "InvalidCardInput" || error._tag === "RequestIdConflict" || Describe.isRefusedLocally(error)
      ? usage(line)
      : { code: ofQuoteFailure(error), line: Option.some(line) }
  }
  if (EffectCliError.isCliError(error)) {
    // `ShowHelp` without errors: the help was asked for, or `gcx` alone was run, and printed
    if (error._tag === "ShowHelp" && error.errors.length === 0) {
      return { code: ExitCode.Completed, line: Option.none() }
    }
    return usage(
      describeUsageError(error),
      error._tag === "ShowHelp" && error.commandPath.length > 1 ? error.commandPath.slice(1).join(" ") : command
    )
  }
  switch (error._tag) {
    case "ConfigError":
      return usage(`configuration: ${describeConfigError(error)}${connectionHint(error)}`)
    case "ExitWith":
      return { code: error.code, line: Option.none() }
    case "CliError":
      return error.code === ExitCode.Usage
        ? usage(Describe.oneLine(error.message))
        : { code: error.code, line: Option.some(Describe.oneLine(error.message)) }
    case "BatchKeyError":
      return usage(`batch key: ${Describe.oneLine(error.message)}`)
    case "ServeError":
      return {
        code: ExitCode.Usage,
        line: Option.some(`the sandbox cannot listen${ListenFailure.describe(error.cause)}`)
      }
    case "SandboxOptionsError":
      return usage(`sandbox: ${Describe.oneLine(error.message)}`)
    case "JournalError":
      return { code: ExitCode.ServiceFailure, line: Option.some(`journal: ${Describe.oneLine(error.message)}`) }
    case "PlatformError":
      return { code: ExitCode.Usage, line: Option.some(Describe.oneLine(error.message)) }
  }
}

/**
 * The code and the line for the cause a command ended with: interruption is
 * 130; a defect is reported generically (its message may carry anything).
 */
export const ofCause = (cause: Cause.Cause<Failure>, command?: string): Outcome =>
  Option.match(Cause.findErrorOption(cause), {
    onSome: (error) => ofFailure(error, command),
    onNone: () =>
      Cause.hasInterruptsOnly(cause)
        ? { code: ExitCode.Interrupted, line: Option.some("interrupted") }
        : {
          code: ExitCode.Unexpected,
          line: Option.some("unexpected failure inside gcx (a bug); run with --log-level debug for its details")
        }
  })

/**
 * Runs a command and returns its exit code. A failure is reported as
 * `error: <one line>` on stderr (`command` names the subcommand in the usage
 * hint); its full cause is logged at debug level only
 * (`--log-level debug`), since a defect's message may carry anything.
 */
export const report = <R>(
  effect: Effect.Effect<unknown, Failure, R>,
  command?: string
): Effect.Effect<ExitCode, never, R> =>
  Effect.matchCauseEffect(effect, {
    onSuccess: () => Effect.succeed(ExitCode.Completed),
    onFailure: (cause) => {
      const { code, line } = ofCause(cause, command)
      return Effect.logDebug("gcx failed", Cause.pretty(cause)).pipe(
        Effect.andThen(
          Option.match(line, {
            onNone: () => Effect.void,
            onSome: (line) => Console.error(`error: ${Text.safe(line)}`)
          })
        ),
        Effect.as(code)
      )
    }
  })

/** Whether the command runs until it is stopped (`untilStopped`). */
let serving = false

/**
 * Marks `command` as one that runs until stopped (`gcx serve`, `gcx runner`),
 * from its start. A stop asked by SIGTERM, as systemd, Kubernetes or Docker
 * ask it, is then the command's normal end, even while it starts: once its
 * shutdown has run without a failure, the process exits 0 (`teardown`),
 * which a process manager counts as a clean stop (it counts 130 as a
 * failure). Ctrl+C (SIGINT) still exits 130.
 */
export const untilStopped = <A, E, R>(command: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    serving = true
    return command
  })

/**
 * The teardown for `NodeRuntime.runMain` of a program that returns its exit
 * code: that code; when interrupted, 130, or 0 for a command stopped by
 * SIGTERM that runs until stopped (`untilStopped`); 1 for anything else.
 */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  onExit(
    Exit.isSuccess(exit)
      ? typeof exit.value === "number" ? exit.value : ExitCode.Completed
      : Cause.hasInterruptsOnly(exit.cause)
      ? serving && Output.stopAsked() === "SIGTERM" ? ExitCode.Completed : ExitCode.Interrupted
      : ExitCode.Unexpected
  )
