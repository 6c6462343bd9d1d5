/**
 * The embedded store's statement compiler: `effect/sql`'s SQLite compiler,
 * with one change. A literal made only of integers (`sql.literal("42")`, or
 * a list such as `sql.literal(ids.join(","))`) is bound as parameters instead
 * of written into the text.
 *
 * Why: `effect/cluster`'s storage writes a time and message ids into its
 * polls as literals, so each poll is a SQL text never seen before. SQLite
 * must prepare every text, and `node:sqlite` frees a statement only when the
 * garbage collector finalizes it, which it does late: it does not see the
 * statement's native memory (tens of KB for the poll's join). Over a long run
 * those statements piled up by the hundreds and left the process's malloc
 * heap larger for good. Bound, the poll is one text (and the id list one per
 * length), found in the client's statement cache.
 *
 * Only where a value stands, so that the statement means the same: right
 * after a comparison (`=`, `<>`, `<=`, ...) for one integer, or an opening
 * `IN (` for one or a list (of at most 1,000: SQLite limits the parameters of
 * a statement); outside strings, quoted names and comments; with the text on
 * both sides, never glued to a word or a number; and in queries and writes
 * only (`SELECT`, `INSERT`, `UPDATE`, `DELETE`, `WITH`, `REPLACE`), never in
 * a `CREATE` (views, triggers and partial indexes take no parameters) or a
 * `PRAGMA`. So `ORDER BY 2`, `VARCHAR(64)`, `DEFAULT 0` or `LIMIT 10` stay as
 * written. (A query that only a partial index with that literal serves would
 * lose the index: `effect/cluster`'s tables have none, gcx writes no literal.)
 * The values are bound as `bigint` (the cluster's ids pass 2^53), and only
 * unsigned integers that fit SQLite's 64-bit integer.
 */
import * as Statement from "effect/sql/Statement"

/** One integer, or a comma-separated list of them, and nothing else. */
const integerList = /^\s*\d{1,19}(?:\s*,\s*\d{1,19})*\s*$/

const maxInteger = 2n ** 63n - 1n

/** The most values of one list that are bound. */
const maxList = 1_000

/** The statements whose literals may be bound: queries and writes. */
const dataStatement = /^\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH|REPLACE)\b/i

/** The text before a value: a comparison, or an opening `IN (` (for a list too). */
const afterComparison = /[=<>]\s*$/
const afterIn = /\bIN\s*\(\s*$/i

/** The literal's integers, or `undefined` when it is anything else (or one of them does not fit). */
const integersOf = (literal: Statement.Literal): ReadonlyArray<bigint> | undefined => {
  if (literal.params !== undefined && literal.params.length > 0) return undefined
  if (!integerList.test(literal.value)) return undefined
  const values = literal.value.split(",").map((text) => BigInt(text.trim()))
  return values.length <= maxList && values.every((value) => value <= maxInteger) ? values : undefined
}

type Lexical = "code" | "'" | "\"" | "`" | "]" | "--" | "*/"

/**
 * Whether the text of the literals before `end` ends in code: not inside a
 * string, a quoted name or a comment. The other segments (names, parameters,
 * helpers) are written by the compiler and leave the state as it is.
 */
const endsInCode = (segments: ReadonlyArray<Statement.Segment>, end: number): boolean => {
  let state: Lexical = "code"
  for (let i = 0; i < end; i++) {
    const segment = segments[i]
    if (segment._tag !== "Literal") continue
    const text = segment.value
    for (let at = 0; at < text.length; at++) {
      const char = text[at]
      switch (state) {
        case "code":
          if (char === "'" || char === "\"" || char === "`") state = char
          else if (char === "[") state = "]"
          else if (char === "-" && text[at + 1] === "-") {
            state = "--"
            at++
          } else if (char === "/" && text[at + 1] === "*") {
            state = "*/"
            at++
          }
          break
        case "--":
          if (char === "\n") state = "code"
          break
        case "*/":
          if (char === "*" && text[at + 1] === "/") {
            state = "code"
            at++
          }
          break
        default:
          // a doubled quote closes and opens again: the same state after both
          if (char === state) state = "code"
      }
    }
  }
  return state === "code"
}

/** Whether the literal at `index` stands where a value does (see the module's doc). */
const inValuePosition = (segments: ReadonlyArray<Statement.Segment>, index: number, list: boolean): boolean => {
  const before = segments[index - 1]
  const after = segments[index + 1]
  if (before?._tag !== "Literal") return false
  if (!(afterIn.test(before.value) || (!list && afterComparison.test(before.value)))) return false
  if (after !== undefined && (after._tag !== "Literal" || /^[\w.$]/.test(after.value))) return false
  return endsInCode(segments, index)
}

/** `statement` with its integer literals bound; the same object when it has none. */
export const bindIntegerLiterals = (statement: Statement.Fragment): Statement.Fragment => {
  const segments = statement.segments
  const first = segments[0]
  if (first?._tag !== "Literal" || !dataStatement.test(first.value)) return statement
  let rewritten: Array<Statement.Segment> | undefined
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]
    if (segment._tag !== "Literal") continue
    const values = integersOf(segment)
    if (values === undefined || !inValuePosition(segments, i, values.length > 1)) continue
    rewritten ??= segments.slice()
    rewritten[i] = Statement.literal(values.map(() => "?").join(","), values)
  }
  return rewritten === undefined ? statement : Statement.fragment(rewritten)
}

/** `compiler`, compiling each statement with its integer literals bound. */
const binding = (compiler: Statement.Compiler): Statement.Compiler => ({
  dialect: compiler.dialect,
  compile: (statement, withoutTransform) => compiler.compile(bindIntegerLiterals(statement), withoutTransform),
  get withoutTransform() {
    return binding(compiler.withoutTransform)
  }
})

/** The SQLite compiler (`Statement.makeCompilerSqlite`), binding integer literals. */
export const make = (transform?: ((name: string) => string) | undefined): Statement.Compiler =>
  binding(Statement.makeCompilerSqlite(transform))
