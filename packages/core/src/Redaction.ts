/**
 * Secret hygiene: masking card numbers, keeping the service's text within
 * bounds (`serviceText`, `traceId`), and describing decode failures without
 * echoing the values that failed (they may be card data or tokens).
 */
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as SchemaAST from "effect/SchemaAST"
import type * as SchemaIssue from "effect/SchemaIssue"

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
 * message that echoes a card number cannot carry it further; and so a card
 * number written in groups: groups of at least 3 digits apart by single spaces
 * or dashes, 12 digits or more in all (`6006 0000 0000 0001`,
 * `6006-0000-0000-0001`), masked as its digits, wherever it stands. Shorter
 * groups (a date, `2026-11-29`) stay.
 */
export const scrubDigits = (text: string): string =>
  text
    .replace(/\d{3,}(?:[ -]\d{3,})+/g, (grouped) => {
      const digits = grouped.replace(/[ -]/g, "")
      return digits.length >= 12 ? maskCardNumber(digits) : grouped
    })
    .replace(/\d{8,}/g, (digits) => maskCardNumber(digits))

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

/**
 * The Location of a created transaction as gcx keeps it: `serviceText`, but
 * the path segment that names the transaction (its id, from the body, checked
 * already) is kept whole, so that an id with 8 digits in a row (a 26-character
 * transaction id has them now and then) still names its transaction. Anything
 * around it is masked as usual.
 */
export const location = (text: string, transactionId: string): string => {
  const segment = `/${encodeURIComponent(transactionId)}`
  const end = text.search(/[?#]/)
  const path = end === -1 ? text : text.slice(0, end)
  // a path too long to keep with room for the cut marker is cut as any service text
  if (!path.endsWith(segment) || path.length > maxServiceText - 64) return serviceText(text)
  const kept = `${scrubDigits(path.slice(0, -segment.length))}${segment}`
  const rest = text.slice(path.length)
  return rest === "" ? kept : `${kept}${serviceText(rest, maxServiceText - kept.length)}`
}

/** The longest SVC-TRACE-ID that gcx keeps. */
export const maxTraceId = 128

/** Why an SVC-TRACE-ID was dropped: empty or over 128 characters, a character outside `[A-Za-z0-9._:-]`, or a run of 8 digits. */
export type TraceIdProblem = "length" | "characters" | "digits"

const traceIdCharacters = /^[A-Za-z0-9._:-]*$/

/**
 * Whether an SVC-TRACE-ID looks like a trace id: 1 to 128 characters of
 * `[A-Za-z0-9._:-]` with no run of 8 or more digits (which could be a card
 * number that the service echoed). The value, or why it is dropped.
 */
export const checkTraceId = (value: string): Result.Result<string, TraceIdProblem> =>
  value.length === 0 || value.length > maxTraceId
    ? Result.fail("length")
    : !traceIdCharacters.test(value)
    ? Result.fail("characters")
    : /\d{8}/.test(value)
    ? Result.fail("digits")
    : Result.succeed(value)

/** The SVC-TRACE-ID that gcx keeps: the value when it looks like a trace id (`checkTraceId`), else `undefined`. */
export const traceId = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : Result.getOrUndefined(checkTraceId(value))

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

/**
 * Collects the problems of an issue tree. Only the schema's side of an issue
 * is read (its AST, checks and annotations); the `input` that an issue holds
 * when decoded with `reportInput: true` is never looked at.
 */
const walk = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>, out: Array<Problem>): void => {
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, [...path, ...issue.path], out)
    case "Composite":
      for (const inner of issue.issues) walk(inner, path, out)
      return
    case "AnyOf":
      return walkUnion(issue, path, out)
    case "Filter":
      // a check that refused the value names what it expected; a check that points deeper is walked
      if (issue.issue._tag === "InvalidValue") return expect(out, path, describeCheck(issue.filter, issue.issue))
      return walk(issue.issue, path, out)
    case "Encoding":
      // a transformation that refused the value is named by its schema (`Money`) or by what it expected
      if (issue.issue._tag === "InvalidValue") {
        return expect(
          out,
          path,
          SchemaAST.resolveIdentifier(issue.ast) ?? expectedOf(issue.issue) ?? describeAst(issue.ast)
        )
      }
      return walk(issue.issue, path, out)
    case "InvalidType":
      return expect(out, path, describeAst(issue.ast))
    case "InvalidValue":
      return expect(out, path, expectedOf(issue) ?? "a valid value")
    case "MissingKey":
      return say(out, path, "is missing")
    case "UnexpectedKey":
      return say(out, path, "is not allowed")
    case "Forbidden":
      return say(out, path, "could not be decoded")
    case "OneOf":
      return say(out, path, "matches more than one alternative")
  }
}

const expect = (out: Array<Problem>, path: ReadonlyArray<PropertyKey>, expected: string): void => {
  out.push({ _tag: "Expected", path: formatPath(path), expected })
}

const say = (out: Array<Problem>, path: ReadonlyArray<PropertyKey>, text: string): void => {
  out.push({ _tag: "Sentence", path: formatPath(path), text })
}

/**
 * A value that matched no member of a union is not any of its members
 * (`x is not a string or null`): each member is named from the schema, and the
 * members that were tried add only what they found deeper inside the value
 * (which tells which member was meant), so that a member is never named twice.
 */
const walkUnion = (issue: SchemaIssue.AnyOf, path: ReadonlyArray<PropertyKey>, out: Array<Problem>): void => {
  const tagged = describeTagged(issue.ast.types)
  if (tagged !== undefined) expect(out, path, tagged)
  else for (const member of issue.ast.types) expect(out, path, describeAst(member))
  if (issue.issues.length === 0) return
  const here = formatPath(path)
  const inner: Array<Problem> = []
  for (const tried of issue.issues) walk(tried, path, inner)
  for (const problem of inner) {
    if (problem._tag === "Sentence" || problem.path !== here) out.push(problem)
  }
}

/**
 * A union of objects told apart by a literal field (`_tag`), named by that
 * field: `an object whose _tag is "Submitted", "Progress" or "Failed"`.
 */
const describeTagged = (members: ReadonlyArray<SchemaAST.AST>): string | undefined => {
  const objects: Array<SchemaAST.Objects> = []
  for (const member of members) {
    const encoded = SchemaAST.toEncoded(member)
    if (!SchemaAST.isObjects(encoded)) return undefined
    objects.push(encoded)
  }
  const [first, ...rest] = objects
  if (first === undefined || rest.length === 0) return undefined
  for (const candidate of first.propertySignatures) {
    const literals: Array<string> = []
    for (const object of objects) {
      const field = object.propertySignatures.find((signature) => signature.name === candidate.name)
      if (field === undefined || !SchemaAST.isLiteral(field.type)) break
      literals.push(describeAst(field.type))
    }
    if (literals.length === objects.length) {
      const last = literals.pop()!
      return `an object whose ${String(candidate.name)} is ${literals.join(", ")} or ${last}`
    }
  }
  return undefined
}

/** The `expected` annotation of an issue, if it has one. */
const expectedOf = (issue: SchemaIssue.InvalidValue): string | undefined => {
  const expected = issue.annotations?.expected
  return typeof expected === "string" ? expected : undefined
}

/** What a refused check expected (`a finite number`), from the check's annotations, never from the value. */
const describeCheck = (filter: SchemaAST.Filter<unknown>, issue: SchemaIssue.InvalidValue): string => {
  const annotations = filter.annotations
  if (typeof annotations?.expected === "string") return annotations.expected
  if (typeof annotations?.description === "string") return annotations.description
  return expectedOf(issue) ?? "a valid value"
}

/**
 * What a schema expects (its identifier, check, kind or description), from the
 * schema alone, never from the value. A schema read from a JSON object or
 * array (a `Schema.Class`) is named by that wire shape, not by its class.
 */
const describeAst = (ast: SchemaAST.AST): string => {
  if (ast.encoding !== undefined) {
    const encoded = SchemaAST.toEncoded(ast)
    if (encoded._tag === "Objects" || encoded._tag === "Arrays") return describeAst(encoded)
  }
  const annotations = SchemaAST.resolve(ast)
  if (typeof annotations?.identifier === "string") return annotations.identifier
  if (ast.checks !== undefined && typeof annotations?.expected === "string") return annotations.expected
  switch (ast._tag) {
    case "String":
      return "a string"
    case "Number":
      return "a number"
    case "Boolean":
      return "a boolean"
    case "BigInt":
      return "a bigint"
    case "Null":
      return "null"
    case "Undefined":
      return "undefined"
    case "Objects":
      return "an object"
    case "Arrays":
      return "an array"
    case "Literal": {
      const literal = ast.literal
      return typeof literal === "bigint" ? `${literal}n` : JSON.stringify(literal)
    }
  }
  if (typeof annotations?.expected === "string") return annotations.expected
  if (typeof annotations?.description === "string") return annotations.description
  return "of the expected shape"
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
  // a Set, not `Arr.dedupe`, which is quadratic: a SchemaError with `errors: "all"` may hold thousands of issues
  return Array.from(
    new Set(
      lines.map((line) =>
        typeof line === "string" ? line : `${line.path} is not ${expected.get(line.path)!.join(" or ")}`
      )
    )
  )
}

/**
 * A one-line description of a decode failure (the `issue` of a
 * `Schema.SchemaError`) that names the failing paths and what was expected
 * there, but never the actual values, even when the issue holds them
 * (`reportInput: true`).
 */
export const describeParseIssue = (issue: SchemaIssue.Issue, limit = 5): string => {
  const problems: Array<Problem> = []
  walk(issue, [], problems)
  const unique = toLines(problems)
  const shown = unique.slice(0, limit).join("; ")
  return unique.length > limit ? `${shown}; and ${unique.length - limit} more` : shown
}
