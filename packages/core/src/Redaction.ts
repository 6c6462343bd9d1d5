/**
 * Secret hygiene: masking card numbers, keeping the service's text within
 * bounds (`serviceText`, `traceId`), and describing decode failures without
 * echoing the values that failed (they may be card data or tokens).
 */
import * as Arr from "effect/Array"
import * as Either from "effect/Either"
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

/** The most characters of one service text that gcx keeps (`serviceText`). */
export const maxServiceText = 1024

/**
 * A text from the service (an ErrorCode, Message, UserMessage, MoreInfoUrl,
 * Location, OAuth error) as gcx keeps it: its runs of 8 or more digits masked
 * (`scrubDigits`), then cut to `max` characters (1,024 by default) ending with
 * a marker that gives the length as sent, `… (cut from 900,000 characters)`.
 * Masking comes first, so that a cut never leaves part of a card number in clear.
 */
export const serviceText = (text: string, max: number = maxServiceText): string => {
  const masked = scrubDigits(text)
  if (masked.length <= max) return masked
  const marker = `… (cut from ${text.length.toLocaleString("en-US")} characters)`
  let end = Math.max(0, max - marker.length)
  // never half of a surrogate pair
  const last = masked.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end -= 1
  return `${masked.slice(0, end)}${marker}`
}

/** The longest SVC-TRACE-ID that gcx keeps. */
export const maxTraceId = 128

/** Why an SVC-TRACE-ID was dropped: empty or over 128 characters, a character outside `[A-Za-z0-9._:-]`, or a run of 8 digits. */
export type TraceIdProblem = "length" | "characters" | "digits"

const traceIdCharacters = /^[A-Za-z0-9._:-]*$/

/**
 * Whether an SVC-TRACE-ID looks like a trace id: 1 to 128 characters of
 * `[A-Za-z0-9._:-]` with no run of 8 or more digits (which could be a card
 * number that the service echoed). Either the value or why it is dropped.
 */
export const checkTraceId = (value: string): Either.Either<string, TraceIdProblem> =>
  value.length === 0 || value.length > maxTraceId
    ? Either.left("length")
    : !traceIdCharacters.test(value)
    ? Either.left("characters")
    : /\d{8}/.test(value)
    ? Either.left("digits")
    : Either.right(value)

/** The SVC-TRACE-ID that gcx keeps: the value when it looks like a trace id (`checkTraceId`), else `undefined`. */
export const traceId = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : Either.getOrUndefined(checkTraceId(value))

/**
 * `response.steps[0].isCompleted`. Keys come from the schema, but an excess
 * key (`onExcessProperty: "error"`) comes from the input, so the path is a
 * `serviceText`: digits scrubbed, cut to 1,024 characters.
 */
const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "body" : serviceText(path.reduce<string>(
    (out, key) => typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`,
    ""
  ))

/** One problem found in a decode failure: at a path, either an expected type or a sentence. */
type Problem =
  | { readonly _tag: "Expected"; readonly path: string; readonly expected: string }
  | { readonly _tag: "Sentence"; readonly path: string; readonly text: string }

const walk = (
  issue: ParseResult.ParseIssue,
  path: ReadonlyArray<PropertyKey>,
  out: Array<Problem>
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
      out.push({ _tag: "Sentence", path: formatPath(path), text: "is missing" })
      return
    case "Unexpected":
      out.push({ _tag: "Sentence", path: formatPath(path), text: "is not allowed" })
      return
    case "Forbidden":
      out.push({ _tag: "Sentence", path: formatPath(path), text: "could not be decoded" })
      return
    case "Type":
      out.push({ _tag: "Expected", path: formatPath(path), expected: describeType(issue) })
      return
  }
}

const IdentifierKey = Symbol.for("effect/annotation/Identifier")
const DescriptionKey = Symbol.for("effect/annotation/Description")

/** What was expected, from the schema alone (its identifier, kind or description), never from the value. */
const describeType = (issue: ParseResult.Type): string => {
  const identifier = issue.ast.annotations[IdentifierKey]
  if (typeof identifier === "string") return identifier
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
    case "Literal": {
      const literal = issue.ast.literal
      return typeof literal === "bigint" ? `${literal}n` : JSON.stringify(literal)
    }
  }
  const description = issue.ast.annotations[DescriptionKey]
  return typeof description === "string" ? description : "of the expected shape"
}

/** The paths that hold a path: `body`, `a`, `a.b` and `a.b[0]` for `a.b[0].c`. */
const ancestors = (path: string): Array<string> => {
  if (path === "body") return []
  const out = ["body"]
  for (let i = 1; i < path.length; i++) {
    if (path[i] === "." || path[i] === "[") out.push(path.slice(0, i))
  }
  return out
}

/**
 * One line per path, in order of first appearance; the alternatives of a union
 * at one path are joined (`x is not a string or null`), and an alternative is
 * left out when a problem deeper inside the same value shows which one was meant
 * (`steps[0].isCompleted is not a boolean` rather than also `steps is not null`).
 */
const toLines = (problems: ReadonlyArray<Problem>): Array<string> => {
  const expected = new Map<string, Array<string>>()
  const lines: Array<string | { readonly path: string }> = []
  const holders = new Set(problems.flatMap((problem) => ancestors(problem.path)))
  const relevant = problems.filter((problem) => problem._tag === "Sentence" || !holders.has(problem.path))
  for (const problem of relevant) {
    if (problem._tag === "Sentence") {
      lines.push(`${problem.path} ${problem.text}`)
      continue
    }
    const alternatives = expected.get(problem.path)
    if (alternatives === undefined) {
      expected.set(problem.path, [problem.expected])
      lines.push({ path: problem.path })
    } else if (!alternatives.includes(problem.expected)) {
      alternatives.push(problem.expected)
    }
  }
  // a Set, not `Arr.dedupe`, which is quadratic: a ParseError with `errors: "all"` may hold thousands of issues
  return Array.from(
    new Set(
      lines.map((line) =>
        typeof line === "string" ? line : `${line.path} is not ${expected.get(line.path)!.join(" or ")}`
      )
    )
  )
}

/**
 * A one-line description of a decode failure that names the failing paths and
 * what was expected there, but never the actual values.
 */
export const describeParseIssue = (issue: ParseResult.ParseIssue, limit = 5): string => {
  const problems: Array<Problem> = []
  walk(issue, [], problems)
  const unique = toLines(problems)
  const shown = unique.slice(0, limit).join("; ")
  return unique.length > limit ? `${shown}; and ${unique.length - limit} more` : shown
}
