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
 * The values are bound as `bigint` (the cluster's ids pass 2^53), and only
 * where binding means the same: not inside a quoted string, and only
 * unsigned integers that fit SQLite's 64-bit integer.
 */
import * as Statement from "effect/sql/Statement"

/** One integer, or a comma-separated list of them, and nothing else. */
const integerList = /^\s*\d{1,19}(?:\s*,\s*\d{1,19})*\s*$/

const maxInteger = 2n ** 63n - 1n

/** The literal's integers, or `undefined` when it is anything else (or one of them does not fit). */
const integersOf = (literal: Statement.Literal): ReadonlyArray<bigint> | undefined => {
  if (literal.params !== undefined && literal.params.length > 0) return undefined
  if (!integerList.test(literal.value)) return undefined
  const values = literal.value.split(",").map((text) => BigInt(text.trim()))
  return values.every((value) => value <= maxInteger) ? values : undefined
}

/** Whether the text so far leaves a single-quoted string open. */
const insideString = (segments: ReadonlyArray<Statement.Segment>, end: number) => {
  let quotes = 0
  for (let i = 0; i < end; i++) {
    const segment = segments[i]
    if (segment._tag !== "Literal") continue
    for (let at = segment.value.indexOf("'"); at !== -1; at = segment.value.indexOf("'", at + 1)) quotes++
  }
  return quotes % 2 === 1
}

/** `statement` with its integer literals bound; the same object when it has none. */
export const bindIntegerLiterals = (statement: Statement.Fragment): Statement.Fragment => {
  const segments = statement.segments
  let rewritten: Array<Statement.Segment> | undefined
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]
    if (segment._tag !== "Literal") continue
    const values = integersOf(segment)
    if (values === undefined || insideString(segments, i)) continue
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
