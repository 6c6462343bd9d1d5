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
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
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
export class ExchangeConfig extends Context.Tag("@gcx/http/ExchangeConfig")<ExchangeConfig, Service>() {}

/** Overrides of the retry settings; what is left out keeps its default (`RetryPolicy.defaults`). */
export interface RetryOptions {
  readonly maxAttempts?: number | undefined
  readonly baseDelay?: Duration.DurationInput | undefined
  readonly maxDelay?: Duration.DurationInput | undefined
  readonly budget?: Partial<RetryBudget.Settings> | undefined
}

/** The settings that have defaults: the request timeout and the retry settings. */
export interface Tuning {
  /** Default: 10 seconds. */
  readonly requestTimeout?: Duration.DurationInput | undefined
  /** The most bytes read from one answer. Default 1 MiB (`defaultMaxResponseBytes`). */
  readonly maxResponseBytes?: number | undefined
  /** The shortest time between two token requests. Default 1 second (`defaultMinTokenInterval`). */
  readonly minTokenInterval?: Duration.DurationInput | undefined
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

type Check<A> = Either.Either<A, string>

const checkUrl = (input: string | URL): Check<string> => {
  let url: URL
  try {
    url = new URL(input)
  } catch {
    return Either.left("must be an absolute http(s) URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return Either.left("must be an http or https URL")
  if (url.username !== "" || url.password !== "") return Either.left("must not carry credentials")
  if (url.search !== "" || url.hash !== "") return Either.left("must not have a query or a fragment")
  return Either.right(url.href.replace(/\/+$/, ""))
}

const checkStage = (stage: string): Check<Option.Option<string>> => {
  const trimmed = stage.trim().replace(/^\/+|\/+$/g, "")
  if (trimmed === "") return Either.right(Option.none())
  return /^[A-Za-z0-9._~-]{1,64}$/.test(trimmed)
    ? Either.right(Option.some(trimmed))
    : Either.left("must be one path segment of letters, digits, '.', '_', '~' or '-'")
}

const checkNonEmpty = (value: string): Check<string> =>
  value.trim() === "" ? Either.left("must not be empty") : Either.right(value.trim())

const checkSecret = (value: Redacted.Redacted<string> | string): Check<Redacted.Redacted<string>> => {
  const plain = Redacted.isRedacted(value) ? Redacted.value(value) : value
  return plain.trim() === "" ? Either.left("must not be empty") : Either.right(Redacted.make(plain.trim()))
}

const checkDuration = (input: Duration.DurationInput, positive: boolean): Check<Duration.Duration> =>
  Option.match(Duration.decodeUnknown(input), {
    onNone: () => Either.left("must be a duration"),
    onSome: (duration) =>
      !Duration.isFinite(duration) || Duration.toMillis(duration) < 0 ||
        (positive && Duration.toMillis(duration) === 0)
        ? Either.left(positive ? "must be a finite positive duration" : "must be a finite duration")
        : Either.right(duration)
  })

const checkNumber = (value: number, minimum: number, integer: boolean): Check<number> =>
  Number.isFinite(value) && value >= minimum && (!integer || Number.isInteger(value))
    ? Either.right(value)
    : Either.left(`must be ${integer ? "an integer" : "a number"} of at least ${minimum}`)

const field = <A>(name: string, check: Check<A>): Either.Either<A, ConfigError.ConfigError> =>
  Either.mapLeft(check, (message) => ConfigError.InvalidData([name], `${name} ${message}`))

const resolveRetry = (
  options: RetryOptions | undefined
): Either.Either<RetryPolicy.Settings, ConfigError.ConfigError> => {
  const defaults = RetryPolicy.defaults
  return Either.all({
    maxAttempts: field("retry.maxAttempts", checkNumber(options?.maxAttempts ?? defaults.maxAttempts, 1, true)),
    baseDelay: field("retry.baseDelay", checkDuration(options?.baseDelay ?? defaults.baseDelay, false)),
    maxDelay: field("retry.maxDelay", checkDuration(options?.maxDelay ?? defaults.maxDelay, false)),
    budget: Either.all({
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
 * Resolves options into a configuration, or a `ConfigError` (InvalidData)
 * naming the first field that is malformed.
 */
export const make = (options: Options): Either.Either<Service, ConfigError.ConfigError> => {
  const environment = options.environment ?? "custom"
  return Either.all({
    baseUrl: field("baseUrl", checkUrl(options.baseUrl)),
    authUrl: field("authUrl", checkUrl(options.authUrl)),
    stage: options.stage === undefined
      ? Either.right(defaultStage(environment))
      : field("stage", checkStage(options.stage)),
    scope: options.scope === undefined ?
      Either.right(Option.none()) :
      field("scope", checkNonEmpty(options.scope)).pipe(
        Either.map(Option.some)
      ),
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
  }).pipe(Either.map((resolved) => ({
    ...resolved,
    environment,
    authStyle: options.authStyle ?? "body"
  })))
}

/** A layer of the configuration given by `options`; fails with a `ConfigError` naming a malformed field. */
export const layer = (options: Options): Layer.Layer<ExchangeConfig, ConfigError.ConfigError> =>
  Layer.effect(ExchangeConfig, make(options))

const variable = <A, B>(config: Config.Config<A>, name: string, check: (value: A) => Check<B>): Config.Config<B> =>
  Config.mapOrFail(
    config,
    (value) => Either.mapLeft(check(value), (message) => ConfigError.InvalidData([], `${name} ${message}`))
  )

/**
 * The options read from the environment:
 * - `GCX_ENV`: `sandbox`, `production` or `custom` (default `custom`);
 * - `GCX_BASE_URL`, `GCX_AUTH_URL`: required for every environment;
 * - `GCX_STAGE`: optional, default by environment, empty for none;
 * - `GCX_CLIENT_ID`, `GCX_CLIENT_SECRET`, `GCX_API_KEY`: required;
 * - `GCX_SCOPE`: optional;
 * - `GCX_AUTH_STYLE`: `body` or `basic` (default `body`).
 *
 * A missing or malformed variable fails with a `ConfigError` whose path names it.
 */
export const options: Config.Config<Options> = Config.all({
  environment: Config.literal("sandbox", "production", "custom")("GCX_ENV").pipe(Config.withDefault("custom" as const)),
  baseUrl: variable(Config.string("GCX_BASE_URL"), "GCX_BASE_URL", checkUrl),
  authUrl: variable(Config.string("GCX_AUTH_URL"), "GCX_AUTH_URL", checkUrl),
  stage: Config.string("GCX_STAGE").pipe(
    (config) => variable(config, "GCX_STAGE", (stage) => Either.map(checkStage(stage), () => stage)),
    Config.option,
    Config.map(Option.getOrUndefined)
  ),
  authStyle: Config.literal("body", "basic")("GCX_AUTH_STYLE").pipe(Config.withDefault("body" as const)),
  scope: Config.string("GCX_SCOPE").pipe(
    (config) => variable(config, "GCX_SCOPE", checkNonEmpty),
    Config.option,
    Config.map(Option.getOrUndefined)
  ),
  clientId: variable(Config.string("GCX_CLIENT_ID"), "GCX_CLIENT_ID", checkNonEmpty),
  clientSecret: variable(Config.redacted("GCX_CLIENT_SECRET"), "GCX_CLIENT_SECRET", checkSecret),
  apiKey: variable(Config.redacted("GCX_API_KEY"), "GCX_API_KEY", checkSecret)
})

/** The configuration read from the `GCX_*` variables (see `options`), with optional tuning. */
export const config = (tuning?: Tuning): Config.Config<Service> =>
  Config.mapOrFail(options, (options) => make({ ...options, ...tuning }))

/** A layer of the configuration read from the `GCX_*` variables; fails with a `ConfigError` naming the variable. */
export const layerConfig = (tuning?: Tuning): Layer.Layer<ExchangeConfig, ConfigError.ConfigError> =>
  Layer.effect(ExchangeConfig, config(tuning))
