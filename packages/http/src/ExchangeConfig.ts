/**
 * The configuration of the exchange client: environment, addresses, partner
 * credentials, timeouts and retry settings.
 *
 * No host is ever guessed: the spec gives no address for either environment,
 * so `baseUrl` and `authUrl` are always required (`GCX_BASE_URL` and
 * `GCX_AUTH_URL`). The environment only picks the default stage segment of the
 * quote paths: `prod` for production (the spec's example), `sandbox` for the
 * sandbox (the gcx simulator's default; the live sandbox's stage is not
 * documented, so set `GCX_STAGE` for it), none for `custom`. An empty stage
 * turns the segment off.
 */
import * as ConfigProblem from "@gcx/core/ConfigProblem"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import {
  checkDuration,
  checkNonEmpty,
  checkNumber,
  checkSecret,
  checkStage,
  checkUrl,
  field
} from "./internal/checks.js"
import * as Variables from "./internal/variables.js"
import type * as RetryBudget from "./RetryBudget.js"
import * as RetryPolicy from "./RetryPolicy.js"

/** The environments: the two the spec names, and `custom` for anything else (a local sandbox, a proxy). */
export type Environment = "sandbox" | "production" | "custom"

/** How the token request carries the client secret (spec 4.1): in the form body, or in a Basic header. */
export type AuthStyle = "body" | "basic"

/** A resolved configuration. */
export interface Service {
  readonly environment: Environment
  /** The base URL of the API, without a trailing slash. */
  readonly baseUrl: string
  /** The base URL of the token endpoint, without a trailing slash. */
  readonly authUrl: string
  /** The stage segment of the quote paths (`/prod/v3/exchange/quote`), if any. */
  readonly stage: Option.Option<string>
  readonly authStyle: AuthStyle
  /** The OAuth scope sent with the token request, if any. */
  readonly scope: Option.Option<string>
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
  readonly apiKey: Redacted.Redacted<string>
  /** The longest wait for one HTTP answer, body included. */
  readonly requestTimeout: Duration.Duration
  /** The most bytes read from one answer; a larger one is an `UnexpectedResponse` (reason `TooLarge`). */
  readonly maxResponseBytes: number
  /** The shortest time between two token requests, whatever lifetimes or refusals the servers send. */
  readonly minTokenInterval: Duration.Duration
  readonly retry: RetryPolicy.Settings
}

/** The configuration of the exchange client. */
export class ExchangeConfig extends Context.Service<ExchangeConfig, Service>()("@gcx/http/ExchangeConfig") {}

/** Overrides of the retry settings; what is left out keeps its default (`RetryPolicy.defaults`). */
export interface RetryOptions {
  readonly maxAttempts?: number | undefined
  readonly baseDelay?: Duration.Input | undefined
  readonly maxDelay?: Duration.Input | undefined
  readonly budget?: Partial<RetryBudget.Settings> | undefined
}

/** The settings that have defaults: the request timeout and the retry settings. */
export interface Tuning {
  /** Default: 10 seconds. */
  readonly requestTimeout?: Duration.Input | undefined
  /** The most bytes read from one answer. Default 1 MiB (`defaultMaxResponseBytes`). */
  readonly maxResponseBytes?: number | undefined
  /** The shortest time between two token requests. Default 1 second (`defaultMinTokenInterval`). */
  readonly minTokenInterval?: Duration.Input | undefined
  readonly retry?: RetryOptions | undefined
}

/** What a caller gives to build a configuration. */
export interface Options extends Tuning {
  /** Default: `custom`. */
  readonly environment?: Environment | undefined
  /** An absolute http(s) URL, required: hosts are never guessed. */
  readonly baseUrl: string | URL
  /** An absolute http(s) URL, required: hosts are never guessed. */
  readonly authUrl: string | URL
  /** The stage segment; default by environment (see the module notes); `""` for none. */
  readonly stage?: string | undefined
  /** Default: `body`. */
  readonly authStyle?: AuthStyle | undefined
  readonly scope?: string | undefined
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string> | string
  readonly apiKey: Redacted.Redacted<string> | string
}

/** Every variable `layerConfig` reads. */
export const variables = Variables.variables

/** The default per-request timeout. */
export const defaultRequestTimeout: Duration.Duration = Duration.seconds(10)

/** The default cap on the bytes read from one answer: 1 MiB. */
export const defaultMaxResponseBytes = 1_048_576

/** The default shortest time between two token requests. */
export const defaultMinTokenInterval: Duration.Duration = Duration.seconds(1)

/** The stage segment an environment uses when none is configured. */
export const defaultStage = (environment: Environment): Option.Option<string> => {
  switch (environment) {
    case "production":
      return Option.some("prod")
    case "sandbox":
      return Option.some("sandbox")
    case "custom":
      return Option.none()
  }
}

const resolveRetry = (
  options: RetryOptions | undefined
): Result.Result<RetryPolicy.Settings, Config.ConfigError> => {
  const defaults = RetryPolicy.defaults
  return Result.all({
    maxAttempts: field("retry.maxAttempts", checkNumber(options?.maxAttempts ?? defaults.maxAttempts, 1, true)),
    baseDelay: field("retry.baseDelay", checkDuration(options?.baseDelay ?? defaults.baseDelay, false)),
    maxDelay: field("retry.maxDelay", checkDuration(options?.maxDelay ?? defaults.maxDelay, false)),
    budget: Result.all({
      capacity: field(
        "retry.budget.capacity",
        checkNumber(options?.budget?.capacity ?? defaults.budget.capacity, 0, false)
      ),
      refillPerSecond: field(
        "retry.budget.refillPerSecond",
        checkNumber(options?.budget?.refillPerSecond ?? defaults.budget.refillPerSecond, 0, false)
      )
    })
  })
}

/**
 * Resolves options into a configuration, or a `ConfigError` naming the first
 * field that is malformed (`retry.maxAttempts must be an integer of at least 1`).
 */
export const make = (options: Options): Result.Result<Service, Config.ConfigError> => {
  const environment = options.environment ?? "custom"
  return Result.all({
    baseUrl: field("baseUrl", checkUrl(options.baseUrl)),
    authUrl: field("authUrl", checkUrl(options.authUrl)),
    stage: options.stage === undefined
      ? Result.succeed(defaultStage(environment))
      : field("stage", checkStage(options.stage)),
    scope: options.scope === undefined ?
      Result.succeed(Option.none()) :
      field("scope", checkNonEmpty(options.scope)).pipe(Result.map(Option.some)),
    clientId: field("clientId", checkNonEmpty(options.clientId)),
    clientSecret: field("clientSecret", checkSecret(options.clientSecret)),
    apiKey: field("apiKey", checkSecret(options.apiKey)),
    requestTimeout: field("requestTimeout", checkDuration(options.requestTimeout ?? defaultRequestTimeout, true)),
    maxResponseBytes: field(
      "maxResponseBytes",
      checkNumber(options.maxResponseBytes ?? defaultMaxResponseBytes, 1, true)
    ),
    minTokenInterval: field(
      "minTokenInterval",
      checkDuration(options.minTokenInterval ?? defaultMinTokenInterval, false)
    ),
    retry: resolveRetry(options.retry)
  }).pipe(Result.map((resolved): Service => ({
    ...resolved,
    environment,
    authStyle: options.authStyle ?? "body"
  })))
}

/** A layer of the configuration given by `options`; fails with a `ConfigError` naming a malformed field. */
export const layer = (options: Options): Layer.Layer<ExchangeConfig, Config.ConfigError> =>
  Layer.effect(ExchangeConfig, Effect.fromResult(make(options)))

/**
 * The options read from the environment:
 * - `GCX_ENV`: `sandbox`, `production` or `custom` (default `custom`);
 * - `GCX_BASE_URL`, `GCX_AUTH_URL`: required for every environment;
 * - `GCX_STAGE`: optional, default by environment, empty or `/` for none
 *   (Effect 4's environment provider reads an empty variable as unset unless
 *   built with `preserveEmptyStrings: true`: `GCX_STAGE=/` works with any);
 * - `GCX_CLIENT_ID`, `GCX_CLIENT_SECRET`, `GCX_API_KEY`: required (the secrets
 *   are `Redacted` as soon as they are read);
 * - `GCX_SCOPE`: optional;
 * - `GCX_AUTH_STYLE`: `body` or `basic` (default `body`).
 *
 * A `ConfigError` names every variable that is missing (`missingVariables`)
 * and every one that is malformed, with what is wrong with it (never its value).
 */
export const options: Config.Config<Options> = Variables.options

/** The configuration read from the `GCX_*` variables (see `options`), with optional tuning. */
export const config = (tuning?: Tuning): Config.Config<Service> =>
  Config.mapEffect(options, (options) => Effect.fromResult(make({ ...options, ...tuning })))

/** A layer of the configuration read from the `GCX_*` variables; fails with a `ConfigError` naming the variables. */
export const layerConfig = (tuning?: Tuning): Layer.Layer<ExchangeConfig, Config.ConfigError> =>
  Layer.effect(ExchangeConfig, config(tuning))

/**
 * The variables (or fields) a `ConfigError` says are missing, in order; empty
 * when it is only about malformed values or an unreadable source. Replaces
 * Effect 3's `ConfigError.isMissingDataOnly`: a configuration that is only
 * missing variables has `missingVariables(error).length > 0` and names them all.
 * The paths of the `missing` problems of `ConfigProblem.fromError(error)`.
 */
export const missingVariables = (error: Config.ConfigError): ReadonlyArray<string> =>
  ConfigProblem.fromError(error).flatMap((problem) => problem.kind === "missing" ? [problem.path] : [])
