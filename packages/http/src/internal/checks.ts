/**
 * The checks of the configuration's values (shared by `ExchangeConfig.make`
 * and the `GCX_*` variables), and the `ConfigError`s they make: each problem
 * points at its field or variable and says what is wrong, never the value.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"

/** A checked value, or what is wrong with it (`must not be empty`). */
export type Check<A> = Result.Result<A, string>

export const checkUrl = (input: string | URL): Check<string> => {
  let url: URL
  try {
    url = new URL(input)
  } catch {
    return Result.fail("must be an absolute http(s) URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return Result.fail("must be an http or https URL")
  if (url.username !== "" || url.password !== "") return Result.fail("must not carry credentials")
  if (url.search !== "" || url.hash !== "") return Result.fail("must not have a query or a fragment")
  return Result.succeed(url.href.replace(/\/+$/, ""))
}

export const checkStage = (stage: string): Check<Option.Option<string>> => {
  const trimmed = stage.trim().replace(/^\/+|\/+$/g, "")
  if (trimmed === "") return Result.succeed(Option.none())
  return /^[A-Za-z0-9._~-]{1,64}$/.test(trimmed)
    ? Result.succeed(Option.some(trimmed))
    : Result.fail("must be one path segment of letters, digits, '.', '_', '~' or '-'")
}

export const checkNonEmpty = (value: string): Check<string> =>
  value.trim() === "" ? Result.fail("must not be empty") : Result.succeed(value.trim())

export const checkSecret = (value: Redacted.Redacted<string> | string): Check<Redacted.Redacted<string>> => {
  const plain = Redacted.isRedacted(value) ? Redacted.value(value) : value
  return plain.trim() === "" ? Result.fail("must not be empty") : Result.succeed(Redacted.make(plain.trim()))
}

export const checkLiteral = <const L extends string>(literals: ReadonlyArray<L>) => (value: string): Check<L> =>
  literals.includes(value as L)
    ? Result.succeed(value as L)
    : Result.fail(`must be one of ${literals.map((literal) => `"${literal}"`).join(", ")}`)

export const checkDuration = (input: Duration.Input, positive: boolean): Check<Duration.Duration> =>
  Option.match(Duration.fromInput(input), {
    onNone: () => Result.fail("must be a duration"),
    onSome: (duration) =>
      !Duration.isFinite(duration) || Duration.toMillis(duration) < 0 ||
        (positive && Duration.toMillis(duration) === 0)
        ? Result.fail(positive ? "must be a finite positive duration" : "must be a finite duration")
        : Result.succeed(duration)
  })

export const checkNumber = (value: number, minimum: number, integer: boolean): Check<number> =>
  Number.isFinite(value) && value >= minimum && (!integer || Number.isInteger(value))
    ? Result.succeed(value)
    : Result.fail(`must be ${integer ? "an integer" : "a number"} of at least ${minimum}`)

/** What a `ConfigError` of the configuration points at: an invalid value, or a missing variable. */
export type Problem = SchemaIssue.Pointer

export const invalidAt = (name: string, message: string): Problem =>
  new SchemaIssue.Pointer([name], new SchemaIssue.InvalidValue({ message: `${name} ${message}` }))

export const missingAt = (name: string): Problem =>
  new SchemaIssue.Pointer([name], new SchemaIssue.MissingKey({ messageMissingKey: `${name} is not set` }))

// The schema the problems of a configuration are reported against (it only names them).
const optionsAst: SchemaAST.AST = Schema.Record(Schema.String, Schema.Unknown).ast

/**
 * A `ConfigError` with every problem found: each points at the field or the
 * variable it is about (`at ["GCX_BASE_URL"]`) and says what is wrong with it,
 * never its value.
 */
export const configError = (problems: readonly [Problem, ...Array<Problem>]): Config.ConfigError =>
  new Config.ConfigError(
    new Schema.SchemaError(problems.length === 1 ? problems[0] : new SchemaIssue.Composite(optionsAst, problems))
  )

/** A field's check, failing with a `ConfigError` that names the field. */
export const field = <A>(name: string, check: Check<A>): Result.Result<A, Config.ConfigError> =>
  Result.mapError(check, (message) => configError([invalidAt(name, message)]))
