/**
 * The `GCX_*` variables: read together, each as text or absent, and checked
 * together, so that a `ConfigError` names every missing variable and every
 * malformed one at once (documented at `ExchangeConfig.options`).
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as ExchangeConfig from "../ExchangeConfig.js"
import {
  type Check,
  checkLiteral,
  checkNonEmpty,
  checkSecret,
  checkStage,
  checkUrl,
  configError,
  invalidAt,
  missingAt,
  type Problem
} from "./checks.js"

/** Every variable `options` reads. */
export const variables = [
  "GCX_ENV",
  "GCX_BASE_URL",
  "GCX_AUTH_URL",
  "GCX_STAGE",
  "GCX_CLIENT_ID",
  "GCX_CLIENT_SECRET",
  "GCX_API_KEY",
  "GCX_SCOPE",
  "GCX_AUTH_STYLE"
] as const

type Variable = typeof variables[number]

/** One variable as read: absent, or its text. */
const read = (name: string): Config.Config<Option.Option<string>> => Config.option(Config.String(name))

/** The variables, each as text or absent. */
const raw = Config.all(
  Object.fromEntries(variables.map((name) => [name, read(name)])) as {
    readonly [K in Variable]: Config.Config<Option.Option<string>>
  }
)

type Raw = Config.Success<typeof raw>

/** Checks the variables read: every problem (missing or malformed) is collected, in the order of `variables`. */
const checkVariables = (values: Raw): Result.Result<ExchangeConfig.Options, Config.ConfigError> => {
  const problems: Array<Problem> = []
  const optional = <A>(name: Variable, check: (value: string) => Check<A>): A | undefined => {
    const value = values[name]
    if (Option.isNone(value)) return undefined
    const checked = check(value.value)
    if (Result.isSuccess(checked)) return checked.success
    problems.push(invalidAt(name, checked.failure))
    return undefined
  }
  const required = <A>(name: Variable, check: (value: string) => Check<A>): A | undefined => {
    if (Option.isNone(values[name])) {
      problems.push(missingAt(name))
      return undefined
    }
    return optional(name, check)
  }
  const environment = optional("GCX_ENV", checkLiteral(["sandbox", "production", "custom"]))
  const baseUrl = required("GCX_BASE_URL", checkUrl)
  const authUrl = required("GCX_AUTH_URL", checkUrl)
  // The stage is checked here for its message, and resolved by `make`.
  const stage = optional("GCX_STAGE", (stage) => Result.map(checkStage(stage), () => stage))
  const clientId = required("GCX_CLIENT_ID", checkNonEmpty)
  const clientSecret = required("GCX_CLIENT_SECRET", checkSecret)
  const apiKey = required("GCX_API_KEY", checkSecret)
  const scope = optional("GCX_SCOPE", checkNonEmpty)
  const authStyle = optional("GCX_AUTH_STYLE", checkLiteral(["body", "basic"]))
  if (problems.length > 0) return Result.fail(configError(problems as [Problem, ...Array<Problem>]))
  return Result.succeed({
    environment: environment ?? "custom",
    baseUrl: baseUrl!,
    authUrl: authUrl!,
    stage,
    authStyle: authStyle ?? "body",
    scope,
    clientId: clientId!,
    clientSecret: clientSecret!,
    apiKey: apiKey!
  })
}

/** The options read from the `GCX_*` variables (`ExchangeConfig.options`). */
export const options: Config.Config<ExchangeConfig.Options> = raw.pipe(
  Config.mapEffect((values) => Effect.fromResult(checkVariables(values)))
)
