/**
 * The problems a `Config.ConfigError` reports, one entry each: a missing
 * variable, or a refused value with what is wrong with it (the check's own
 * message), never the value. `@gcx/http`'s `ExchangeConfig.missingVariables`
 * and gcx's error reports both read configuration errors through `fromError`.
 */
import * as Config from "effect/Config"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"

/** One problem of a configuration. */
export interface ConfigProblem {
  /** The variable or field it is about (`GCX_BASE_URL`, `retry.maxAttempts`); `""` for the whole configuration. */
  readonly path: string
  /** `missing`: the variable is not set; `invalid`: it is set, and its value is refused. */
  readonly kind: "missing" | "invalid"
  /**
   * One line naming the path: `GCX_AUTH_URL is not set`, or the check's own
   * message (`GCX_BASE_URL must be an absolute http(s) URL`); never the value.
   */
  readonly message: string
}

/**
 * The problems of a configuration error, in order; empty when the error is
 * not about values (the source could not be read: see its `cause`).
 */
export const fromError = (error: Config.ConfigError): ReadonlyArray<ConfigProblem> => {
  if (error.cause._tag !== "SchemaError") return []
  const out: Array<ConfigProblem> = []
  walk(error.cause.issue, [], out)
  return out
}

/**
 * A `ConfigError` saying that the variable `name` is not set (`<name> is not set` through
 * `fromError`). For a `Config.Redacted` read with `Config.option`: a missing one reads as "not a
 * string" in Effect 4, so it is said here.
 */
export const missing = (name: string): Config.ConfigError =>
  new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.MissingKey(undefined))))

/** The name of a configuration path: `GCX_BASE_URL`, `listen`. */
const nameOf = (path: ReadonlyArray<PropertyKey>): string => path.map(String).join(".") || "the configuration"

const messageOf = (annotations: { readonly message?: unknown } | undefined): string | undefined =>
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

const walk = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>, out: Array<ConfigProblem>): void => {
  const invalid = (message: string) => out.push({ path: path.map(String).join("."), kind: "invalid", message })
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, [...path, ...issue.path], out)
    case "Composite":
    case "AnyOf":
      for (const inner of issue.issues) walk(inner, path, out)
      return
    case "Filter": {
      // A refused check speaks for itself when it has a message; else what it found is said.
      const own = messageOf(issue.filter.annotations)
      if (own !== undefined) invalid(own)
      else walk(issue.issue, path, out)
      return
    }
    case "Encoding":
      return walk(issue.issue, path, out)
    case "MissingKey":
      out.push({ path: path.map(String).join("."), kind: "missing", message: `${nameOf(path)} is not set` })
      return
    case "InvalidValue":
    case "Forbidden":
      invalid(messageOf(issue.annotations) ?? `${nameOf(path)} is not valid`)
      return
    case "InvalidType":
      invalid(messageOf(issue.ast.annotations) ?? `${nameOf(path)} is not ${kindOf(issue.ast)}`)
      return
    case "UnexpectedKey":
      invalid(`${nameOf(path)} is not expected`)
      return
    case "OneOf":
      invalid(`${nameOf(path)} matches more than one form`)
      return
  }
}
