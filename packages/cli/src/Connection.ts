/**
 * Where `gcx` connects, and with which credentials: the connection flags
 * shared by `heartbeat`, `quote`, `watch` and `batch`, the `GCX_*` variables
 * behind them, and the embedded sandbox when nothing is configured.
 *
 * - A flag wins over its variable (`--base-url` over `GCX_BASE_URL`). The
 *   secrets (`GCX_CLIENT_SECRET`, `GCX_API_KEY`) are read from the environment
 *   only, so that they never appear in a shell history or a process list.
 * - Embedded mode: with `--embedded`, or, for the interactive commands
 *   (`Fallback` `"embedded"`), when none of the connection settings
 *   (`GCX_ENV`, `GCX_BASE_URL`, `GCX_AUTH_URL`, `GCX_STAGE`, `GCX_CLIENT_ID`,
 *   `GCX_CLIENT_SECRET`, `GCX_API_KEY`, `GCX_SCOPE`, `GCX_AUTH_STYLE`, or
 *   their flags) is set to a non-empty value, a sandbox starts in this process
 *   and its test partner is used; one line on stderr says so. As soon as one
 *   setting is given, all the required ones must be (a missing one is a
 *   configuration error, exit code 2).
 * - A command that serves other nodes or customers (`gcx runner`, client-only
 *   `--durable`: `Fallback` `"none"`) never falls back: without settings it
 *   fails with the configuration error naming every missing variable, and
 *   uses the embedded sandbox only with an explicit `--embedded`.
 */
import * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as TokenProvider from "@gcx/http/TokenProvider"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as QuoteJournal from "@gcx/poller/QuoteJournal"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Arr from "effect/Array"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import type { ServeError } from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ConnectionFlags from "./ConnectionFlags.js"
import type * as Embedded from "./Embedded.js"

/**
 * gcx's undici client (`@gcx/http/UndiciClient`), loaded when a command first builds a client:
 * `gcx --help` and `gcx --version` never load undici.
 */
export const httpClient: Layer.Layer<HttpClient.HttpClient> = Layer.unwrap(
  Effect.promise(() => import("@gcx/http/UndiciClient")).pipe(Effect.map((UndiciClient) => UndiciClient.layer))
)

/** The variables that configure a connection; setting any of them turns the embedded default off. */
export const variables = ExchangeConfig.variables

/** The connection flags (`ConnectionFlags.options`). */
export const options = ConnectionFlags.options

/** The parsed connection flags. */
export type Flags = ConnectionFlags.Flags

/** The flags given, as the variables they stand for. */
const flagValues = (flags: Flags): ReadonlyArray<readonly [string, string]> =>
  Arr.getSomes([
    Option.map(flags.env, (value) => ["GCX_ENV", value] as const),
    Option.map(flags.baseUrl, (value) => ["GCX_BASE_URL", value] as const),
    Option.map(flags.authUrl, (value) => ["GCX_AUTH_URL", value] as const),
    Option.map(flags.stage, (value) => ["GCX_STAGE", value] as const),
    Option.map(flags.clientId, (value) => ["GCX_CLIENT_ID", value] as const),
    Option.map(flags.scope, (value) => ["GCX_SCOPE", value] as const),
    Option.map(flags.authStyle, (value) => ["GCX_AUTH_STYLE", value] as const)
  ])

/** Runs `effect` with the flags as its first configuration source, before the current one (the environment). */
export const withFlags = (flags: Flags) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  ConfigProvider.ConfigProvider.use((current) =>
    Effect.provideService(
      effect,
      ConfigProvider.ConfigProvider,
      ConfigProvider.fromEnvRecord(Object.fromEntries(flagValues(flags)), { preserveEmptyStrings: true }).pipe(
        ConfigProvider.orElse(current)
      )
    )
  )

/** Whether any connection setting is given a non-empty value. */
export const isConfigured: Config.Config<boolean> = Config.all(
  variables.map((name) => Config.String(name).pipe(Config.option))
).pipe(Config.map(Arr.some(Option.exists((value) => value.trim() !== ""))))

/**
 * What a command does when no connection setting is given: `"embedded"`, the
 * interactive commands' default, uses the embedded sandbox and says so;
 * `"none"`, for what serves other nodes or customers, never invents a service.
 */
export type Fallback = "embedded" | "none"

/** Whether this run uses the embedded sandbox, and why (for the line on stderr). */
export const embeddedReason = (
  flags: Flags,
  fallback: Fallback = "embedded"
): Effect.Effect<Option.Option<string>, Config.ConfigError> =>
  flags.embedded
    ? Effect.succeed(Option.some("--embedded"))
    : fallback === "none"
    ? Effect.succeed(Option.none())
    : Effect.map(
      withFlags(flags)(isConfigured),
      (configured) => configured ? Option.none() : Option.some("no GCX_* connection settings (--embedded)")
    )

/**
 * The exchange client for the flags and the environment: remote, or on the
 * embedded sandbox (`--embedded`, or no settings with `fallback` `"embedded"`).
 */
export const layer = (
  flags: Flags,
  fallback: Fallback = "embedded"
): Layer.Layer<
  ExchangeClient.ExchangeClient | TokenProvider.TokenProvider | ExchangeConfig.ExchangeConfig,
  Config.ConfigError | ServeError
> =>
  Layer.unwrap(Effect.gen(function*() {
    const reason = yield* embeddedReason(flags, fallback)
    if (Option.isSome(reason)) {
      // loaded on demand: a process that talks to a configured service never loads the sandbox
      const embedded: typeof Embedded = yield* Effect.promise(() => import("./Embedded.js"))
      return embedded.layer({ timeScale: yield* embedded.timeScale, announce: reason.value })
    }
    const config = Layer.effect(ExchangeConfig.ExchangeConfig, withFlags(flags)(ExchangeConfig.config()))
    return ExchangeClient.layer.pipe(Layer.provideMerge(TokenProvider.layer), Layer.provideMerge(config))
  })).pipe(Layer.provide(httpClient))

/**
 * The poller over a client, with its event bus and a journal that records
 * nothing: `gcx` prints every transaction id, and `gcx watch` resumes one.
 */
export const withPoller = <E>(
  client: Layer.Layer<ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig, E>,
  options?: QuotePoller.Options
): Layer.Layer<
  QuotePoller.QuotePoller | QuoteEvents.QuoteEvents | ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig,
  E
> =>
  QuotePoller.layer(options).pipe(
    Layer.provideMerge(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
    Layer.provideMerge(client)
  )

/** The poller over the connection given by the flags and the environment. */
export const pollerLayer = (
  flags: Flags
): Layer.Layer<
  QuotePoller.QuotePoller | QuoteEvents.QuoteEvents | ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig,
  Config.ConfigError | ServeError
> => withPoller(layer(flags))
