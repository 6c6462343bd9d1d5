/**
 * The embedded sandbox: a sandbox started in this process on a free port,
 * and an exchange client for it with the sandbox's test partner. `gcx` uses it
 * when no connection is configured (see `Connection`), and `pnpm demo`
 * always.
 */
import * as ExchangeClient from "@gcx/http/ExchangeClient"
import type * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import type * as TokenProvider from "@gcx/http/TokenProvider"
import * as Sandbox from "@gcx/sandbox/Sandbox"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import type { ServeError } from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/** How to run the embedded sandbox. */
export interface Options {
  /** Multiplies every scenario duration (0.1: ten times faster). Default 1. */
  readonly timeScale?: number | undefined
  /** When set, one line on stderr says that the embedded sandbox is used, and why. */
  readonly announce?: string | undefined
}

/**
 * `GCX_SANDBOX_TIME_SCALE`: the time scale of the embedded sandbox (a number
 * above 0, default 1). Tests and CI use it to run the scenarios faster.
 */
export const timeScale: Config.Config<number> = Config.schema(
  Schema.NumberFromString.check(
    Schema.makeFilter((scale: number) => scale > 0 || "GCX_SANDBOX_TIME_SCALE must be a number above 0")
  ),
  "GCX_SANDBOX_TIME_SCALE"
).pipe(Config.withDefault(1))

/** The client options for a running sandbox and its default test partner. */
export const clientOptions = (server: Sandbox.Service): ExchangeConfig.Options => Sandbox.clientOptions(server)

/**
 * A quiet sandbox on a free port of 127.0.0.1, stopped when the layer's scope
 * closes; it logs nothing, so nothing of it reaches the output. Its admin key
 * is random: nothing of gcx uses the admin API.
 */
export const sandbox = (options: Options = {}): Layer.Layer<Sandbox.SandboxServer, ServeError> =>
  Layer.effect(
    Sandbox.SandboxServer,
    // Loopback and no options of the user's: an options error would be a bug in gcx.
    Effect.catchTag(Sandbox.make({ logLevel: "None", timeScale: options.timeScale }), "SandboxOptionsError", Effect.die)
  )

/**
 * The embedded sandbox and a client for it: the client's configuration,
 * token provider and `ExchangeClient`, and the `SandboxServer` itself.
 */
export const layer = (
  options: Options = {}
): Layer.Layer<
  | ExchangeClient.ExchangeClient
  | TokenProvider.TokenProvider
  | ExchangeConfig.ExchangeConfig
  | Sandbox.SandboxServer,
  ServeError | Config.ConfigError,
  HttpClient.HttpClient
> =>
  Layer.unwrap(Effect.gen(function*() {
    const server = yield* Sandbox.SandboxServer
    if (options.announce !== undefined) {
      const scale = options.timeScale === undefined || options.timeScale === 1
        ? ""
        : `, time scale ${options.timeScale}`
      yield* Console.error(`gcx: ${options.announce}: using the embedded sandbox at ${server.baseUrl}${scale}`)
    }
    return ExchangeClient.layerWith(clientOptions(server))
  })).pipe(Layer.provideMerge(sandbox(options)))
