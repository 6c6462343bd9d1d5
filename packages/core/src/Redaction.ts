/**
 * Secret hygiene: masking card numbers and describing decode failures without
 * echoing the values that failed (they may be card data or tokens).
 */
import * as Arr from "effect/Array"
import type * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"

/**
 * The masked form of a card number: at most its last 4 characters, never more
 * than half of it, behind a fixed `****` that hides the length.
 */
export const maskCardNumber = (cardNumber: string | Redacted.Redacted<string>): string => {
  const value = Redacted.isRedacted(cardNumber) ? Redacted.value(cardNumber) : cardNumber
  const shown = Math.min(4, Math.floor(value.length / 2))
  return `****${shown === 0 ? "" : value.slice(-shown)}`
}

/**
 * Replaces any run of 8 or more digits in a text by its masked form, so that a
 * message that echoes a card number cannot carry it further.
 */
export const scrubDigits = (text: string): string => text.replace(/\d{8,}/g, (digits) => maskCardNumber(digits))

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "body" : path.map((key) => (typeof key === "number" ? `[${key}]` : String(key))).join(".")

const walk = (
  issue: ParseResult.ParseIssue,
  path: ReadonlyArray<PropertyKey>,
  out: Array<string>
): void => {
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, [...path, ...Arr.ensure(issue.path)], out)
    case "Composite":
      for (const inner of Arr.ensure(issue.issues)) walk(inner, path, out)
      return
    case "Refinement":
    case "Transformation":
      return walk(issue.issue, path, out)
    case "Missing":
      out.push(`${formatPath(path)} is missing`)
      return
    case "Unexpected":
      out.push(`${formatPath(path)} is not allowed`)
      return
    case "Forbidden":
      out.push(`${formatPath(path)} could not be decoded`)
      return
    case "Type":
      out.push(`${formatPath(path)} is not ${issue.ast.annotations[IdentifierKey] ?? describeType(issue)}`)
      return
  }
}

const IdentifierKey = Symbol.for("effect/annotation/Identifier")

const describeType = (issue: ParseResult.Type): string => {
  switch (issue.ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "a boolean"
    case "TypeLiteral":
      return "an object"
    case "TupleType":
      return "an array"
    case "Literal":
      return `${JSON.stringify(issue.ast.literal)}`
    default:
      return "of the expected shape"
  }
}

/**
 * A one-line description of a decode failure that names the failing paths and
 * what was expected there, but never the actual values.
 */
export const describeParseIssue = (issue: ParseResult.ParseIssue, limit = 5): string => {
  const lines: Array<string> = []
  walk(issue, [], lines)
  const unique = Arr.dedupe(lines)
  const shown = unique.slice(0, limit).join("; ")
  return unique.length > limit ? `${shown}; and ${unique.length - limit} more` : shown
}
