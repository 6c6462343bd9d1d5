/**
 * The exit codes of `gcx` and the one-line report of a failure.
 *
 * | code | meaning |
 * |---|---|
 * | 0 | completed |
 * | 1 | unexpected failure inside gcx (a bug) |
 * | 2 | usage or configuration: bad flags or `GCX_*` variables, refused credentials, invalid card input, a request the service refused as malformed, a refused `--out`, a missing, wrong or weak batch key, a sealed card no data key opens |
 * | 3 | card outcome: the card was refused (show the user message to the customer) |
 * | 4 | merchant outcome: the merchant could not be reached (retry later) |
 * | 5 | service failure: the service or the network failed, or the quote did not complete in time |
 * | 130 | interrupted (Ctrl+C) |
 *
 * A report is one line on stderr: never a stack trace, a secret or a full
 * card number (the service's messages are scrubbed by @gcx/core), and no
 * control character (`Text.safe`). A usage error names the flag or the
 * variable and ends with `(see gcx <command> --help)`.
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import type { ValidationError } from "@effect/cli/ValidationError"
import * as CliValidationError from "@effect/cli/ValidationError"
import type * as PlatformError from "@effect/platform/Error"
import type { ServeError } from "@effect/platform/HttpServerError"
import type { Teardown } from "@effect/platform/Runtime"
import type * as Errors from "@gcx/core/Errors"
import * as ErrorTraits from "@gcx/core/ErrorTraits"
import type { JournalError } from "@gcx/poller/QuoteJournal"
import type { SandboxOptionsError } from "@gcx/sandbox/Sandbox"
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type { BatchKeyError } from "./BatchKey.js"
import * as Help from "./Help.js"
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
  | ConfigError.ConfigError
  | ValidationError
  | PlatformError.PlatformError
  | CliError
  | ExitWith
  | ServeError
  | SandboxOptionsError
  | JournalError
  | BatchKeyError

const isQuoteFailure = (error: unknown): error is Errors.QuoteFailure =>
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

const what: Readonly<Record<ErrorTraits.ErrorGroup, string>> = {
  card: "the card was refused",
  merchant: "the merchant is unavailable, retry later",
  request: "the service refused the request",
  service: "the service failed",
  transport: "the service could not be reached",
  unknown: "the service answered with an unknown error",
  local: "the quote failed"
}

/** One line describing a quote failure: what happened, the error's tag and code, and the user message. */
export const describeQuoteFailure = (error: Errors.QuoteFailure): string => {
  const details: Array<string> = [error._tag]
  if ("errorCode" in error && error.errorCode !== undefined) details.push(error.errorCode)
  if ("httpStatus" in error && error.httpStatus !== undefined) details.push(`HTTP ${error.httpStatus}`)
  if ("attempts" in error && error.attempts !== undefined && error.attempts > 1) {
    details.push(`${error.attempts} attempts`)
  }
  const summary = error._tag === "InvalidCardInput"
    ? "invalid card input"
    : error._tag === "PollTimeout"
    ? "the quote did not complete in time"
    : error._tag === "TokenError"
    ? "no access token"
    : error._tag === "CardDecryptionError"
    ? "the sealed card could not be opened"
    : what[ErrorTraits.groupOf(error)]
  const text = error._tag === "PollTimeout"
    ? `transaction ${error.transactionId} did not complete within ${error.deadlineMillis} ms; ` +
      `follow it with: gcx watch ${error.transactionId}`
    : Option.getOrElse(ErrorTraits.customerMessage(error), () => error.message)
  return `${summary} (${details.join(", ")}): ${oneLine(text)}`
}

/** The messages of a configuration error, one per problem, naming the variables. */
export const describeConfigError = (error: ConfigError.ConfigError): string => {
  const problems: Array<string> = []
  const walk = (error: ConfigError.ConfigError): void => {
    switch (error._op) {
      case "And":
      case "Or":
        walk(error.left)
        walk(error.right)
        return
      case "MissingData":
        problems.push(`${error.path.join(".")} is not set`)
        return
      case "InvalidData":
        problems.push(error.message)
        return
      case "SourceUnavailable":
      case "Unsupported":
        problems.push(error.message)
        return
    }
  }
  walk(error)
  return Array.from(new Set(problems)).join("; ")
}

const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

/** The problem a command-line error describes, as one line: `--deadline must be a number above 0, got 'x'`. */
export const describeValidationError = (error: ValidationError): string =>
  oneLine(Text.stripAnsi(HelpDoc.toAnsiText(error.error))).replace(/\.$/, "")

/**
 * The code and the line to print (none when the failure was already
 * reported) for a failure of `command` (the subcommand, for the usage hint).
 */
export const ofFailure = (
  error: Failure,
  command?: string
): { readonly code: ExitCode; readonly line: Option.Option<string> } => {
  const usage = (line: string) => ({ code: ExitCode.Usage, line: Option.some(`${line} ${Help.hint(command)}`) })
  if (isQuoteFailure(error)) {
    const line = describeQuoteFailure(error)
    return error._tag === "InvalidCardInput"
      ? usage(line)
      : { code: ofQuoteFailure(error), line: Option.some(line) }
  }
  if (ConfigError.isConfigError(error)) {
    return usage(`configuration: ${describeConfigError(error)} (or use --embedded for the sandbox)`)
  }
  if (CliValidationError.isValidationError(error)) return usage(describeValidationError(error))
  switch (error._tag) {
    case "ExitWith":
      return { code: error.code, line: Option.none() }
    case "CliError":
      return error.code === ExitCode.Usage
        ? usage(oneLine(error.message))
        : { code: error.code, line: Option.some(oneLine(error.message)) }
    case "BatchKeyError":
      return usage(`batch key: ${oneLine(error.message)}`)
    case "ServeError":
      return { code: ExitCode.Usage, line: Option.some("the sandbox could not listen (is the port in use?)") }
    case "SandboxOptionsError":
      return usage(`sandbox: ${oneLine(error.message)}`)
    case "JournalError":
      return { code: ExitCode.ServiceFailure, line: Option.some(`journal: ${oneLine(error.message)}`) }
    case "BadArgument":
    case "SystemError":
      return { code: ExitCode.Usage, line: Option.some(oneLine(error.message)) }
  }
}

/**
 * The code and the line for the cause a command ended with: interruption is
 * 130; a defect is reported generically (its message may carry anything).
 */
export const ofCause = (
  cause: Cause.Cause<Failure>,
  command?: string
): { readonly code: ExitCode; readonly line: Option.Option<string> } =>
  Option.match(Cause.failureOption(cause), {
    onSome: (error) => ofFailure(error, command),
    onNone: () =>
      Cause.isInterruptedOnly(cause)
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
        Effect.zipRight(
          Option.match(line, {
            onNone: () => Effect.void,
            onSome: (line) => Console.error(`error: ${Text.safe(line)}`)
          })
        ),
        Effect.as(code)
      )
    }
  })

/**
 * The teardown for `NodeRuntime.runMain` of a program that returns its exit
 * code: that code, 130 when interrupted, 1 for anything else.
 */
export const teardown: Teardown = (exit, onExit) =>
  onExit(
    Exit.isSuccess(exit)
      ? typeof exit.value === "number" ? exit.value : ExitCode.Completed
      : Cause.isInterruptedOnly(exit.cause)
      ? ExitCode.Interrupted
      : ExitCode.Unexpected
  )
