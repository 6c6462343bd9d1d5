/**
 * The one-line descriptions behind `ExitCode`'s reports: a quote failure
 * (what happened, its tag and code, the user message), a configuration error
 * (each problem naming its variable, never its value) and a usage error of
 * effect/cli (the flag or argument, never a usage tree). Text only: escaping
 * it for the terminal is the report's part (`Text.safe`).
 */
import * as ConfigProblem from "@gcx/core/ConfigProblem"
import type * as Errors from "@gcx/core/Errors"
import * as ErrorTraits from "@gcx/core/ErrorTraits"
import type * as CliError from "effect/cli/CliError"
import type * as Config from "effect/Config"
import * as Option from "effect/Option"
import * as Help from "./Help.js"
import * as Text from "./Text.js"

/** `text` on one line, its runs of white space one space each. */
export const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

const what: Readonly<Record<ErrorTraits.ErrorGroup, string>> = {
  card: "the card was refused",
  merchant: "the merchant is unavailable, retry later",
  request: "the service refused the request",
  service: "the service failed",
  transport: "the service could not be reached",
  unknown: "the service answered with an unknown error",
  local: "the quote failed"
}

/**
 * An `InvalidRequest` gcx made itself before any I/O (a malformed transaction
 * id or requestId): the service never answered it, so it has no HTTP status.
 */
export const isRefusedLocally = (error: Errors.QuoteFailure): boolean =>
  error._tag === "InvalidRequest" && error.httpStatus === undefined && error.errorCode === undefined

/** One line describing a quote failure: what happened, the error's tag and code, and the user message. */
export const quoteFailure = (error: Errors.QuoteFailure): string => {
  const details: Array<string> = [error._tag]
  if ("errorCode" in error && error.errorCode !== undefined) details.push(error.errorCode)
  if ("httpStatus" in error && error.httpStatus !== undefined) details.push(`HTTP ${error.httpStatus}`)
  if ("attempts" in error && error.attempts !== undefined && error.attempts > 1) {
    details.push(`${error.attempts} attempts`)
  }
  if ("retryBudgetExhausted" in error && error.retryBudgetExhausted === true) details.push("retry budget exhausted")
  const summary = error._tag === "InvalidCardInput"
    ? "invalid card input"
    : isRefusedLocally(error)
    ? "invalid input, nothing was sent"
    : error._tag === "PollTimeout"
    ? "the quote did not complete in time"
    : error._tag === "TokenError"
    ? "no access token"
    : error._tag === "CardDecryptionError"
    ? "the sealed card could not be opened"
    : error._tag === "RequestIdConflict"
    ? "the requestId belongs to another card"
    : what[ErrorTraits.groupOf(error)]
  const text = error._tag === "PollTimeout"
    ? `transaction ${error.transactionId} did not complete within ${Text.millis(error.deadlineMillis)}; ` +
      `follow it with: gcx watch ${error.transactionId}`
    : Option.getOrElse(ErrorTraits.customerMessage(error), () => error.message)
  return `${summary} (${details.join(", ")}): ${oneLine(text)}`
}

/**
 * The messages of a configuration error, one per problem, naming the variables
 * (`ConfigProblem.fromError`): `GCX_AUTH_URL is not set`, or the check's own
 * message (`GCX_BASE_URL must be an absolute http(s) URL`), never the value.
 */
export const configError = (error: Config.ConfigError): string => {
  if (error.cause._tag !== "SchemaError") return oneLine(error.cause.message)
  return Array.from(new Set(ConfigProblem.fromError(error).map((problem) => problem.message))).join("; ")
}

/**
 * The problem a usage error of effect/cli describes, as one line: the flag
 * or argument and what is wrong with it (`--deadline must be a number above
 * 0, got 'abc'`, `unknown flag --bogus`), with the suggestions it has.
 */
export const usageError = (error: CliError.CliError): string => {
  const suggest = (suggestions: ReadonlyArray<string>) =>
    suggestions.length === 0 ? "" : ` (did you mean ${suggestions.join(" or ")}?)`
  switch (error._tag) {
    case "ShowHelp":
      return error.errors.map(usageError).join("; ")
    case "UnrecognizedOption":
      return `unknown flag ${error.option}${suggest(error.suggestions)}`
    case "UnknownSubcommand":
      return `unknown subcommand '${error.subcommand}'${suggest(error.suggestions)}: use one of ${
        Help.commands.join(", ")
      }`
    default:
      return oneLine(error.message).replace(/\.$/, "")
  }
}
