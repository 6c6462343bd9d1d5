/**
 * The one-line descriptions behind `ExitCode`'s reports: a quote failure
 * (what happened, its tag and code, the user message), a configuration error
 * (each problem naming its variable, never its value) and a usage error of
 * effect/cli (the flag or argument, never a usage tree). Text only: escaping
 * it for the terminal is the report's part (`Text.safe`).
 */
import type * as Errors from "@gcx/core/Errors"
import * as ErrorTraits from "@gcx/core/ErrorTraits"
import type * as CliError from "effect/cli/CliError"
import type * as Config from "effect/Config"
import * as Option from "effect/Option"
import type * as SchemaIssue from "effect/SchemaIssue"
import * as Help from "./Help.js"

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

/** One line describing a quote failure: what happened, the error's tag and code, and the user message. */
export const quoteFailure = (error: Errors.QuoteFailure): string => {
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

/** The name of a configuration path: `GCX_BASE_URL`, `listen`. */
const nameOf = (path: ReadonlyArray<PropertyKey>): string => path.map(String).join(".") || "the configuration"

const message = (annotations: { readonly message?: unknown } | undefined): string | undefined =>
  typeof annotations?.message === "string" ? annotations.message : undefined

/** What a schema expects, in a few words, from the schema alone. */
const kindOf = (ast: { readonly _tag: string }): string => {
  switch (ast._tag) {
    case "String":
      return "a string"
    case "Number":
      return "a number"
    case "Boolean":
      return "a boolean"
    case "Literal":
    case "Union":
      return "one of the accepted values"
    default:
      return "valid"
  }
}

/**
 * The problems of a configuration issue, one line each: `GCX_AUTH_URL is not
 * set` for a missing variable, the check's own message for a refused value
 * (`GCX_BASE_URL must be an absolute http(s) URL`), never the value.
 */
const problemsOf = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>, out: Array<string>): void => {
  switch (issue._tag) {
    case "Pointer":
      return problemsOf(issue.issue, [...path, ...issue.path], out)
    case "Composite":
    case "AnyOf":
      for (const inner of issue.issues) problemsOf(inner, path, out)
      return
    case "Filter": {
      const own = message(issue.filter.annotations)
      if (own !== undefined) out.push(own)
      else problemsOf(issue.issue, path, out)
      return
    }
    case "Encoding":
      return problemsOf(issue.issue, path, out)
    case "MissingKey":
      out.push(`${nameOf(path)} is not set`)
      return
    case "InvalidValue":
    case "Forbidden":
      out.push(message(issue.annotations) ?? `${nameOf(path)} is not valid`)
      return
    case "InvalidType":
      out.push(message(issue.ast.annotations) ?? `${nameOf(path)} is not ${kindOf(issue.ast)}`)
      return
    case "UnexpectedKey":
      out.push(`${nameOf(path)} is not expected`)
      return
    case "OneOf":
      out.push(`${nameOf(path)} matches more than one form`)
      return
  }
}

/** The messages of a configuration error, one per problem, naming the variables. */
export const configError = (error: Config.ConfigError): string => {
  if (error.cause._tag !== "SchemaError") return oneLine(error.cause.message)
  const problems: Array<string> = []
  problemsOf(error.cause.issue, [], problems)
  return Array.from(new Set(problems)).join("; ")
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
