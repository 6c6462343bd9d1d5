/**
 * The sandbox server: a stateful simulator of the whole partner service over
 * real HTTP, as a scoped service. `layer` starts it (on a free port by
 * default) and stops it when the layer's scope closes.
 *
 * It serves only requests whose `Host` is one of its names (loopback names,
 * its bound address, `allowedHosts`; others get 421), and its admin key is
 * drawn at random per start unless given, so that a web page cannot drive it.
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import type * as LogLevel from "effect/LogLevel"
import * as NetAddress from "effect/net/NetAddress"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import * as Faults from "./Faults.js"
import * as AdminKey from "./internal/adminKey.js"
import { SandboxConfig } from "./internal/config.js"
import * as Dashboard from "./internal/dashboard.js"
import * as Hosts from "./internal/hosts.js"
import * as Server from "./internal/server.js"
import * as State from "./internal/state.js"
import * as Journal from "./Journal.js"
import type { Summary } from "./Lifecycle.js"
import * as Store from "./Store.js"
import * as TestData from "./TestData.js"
import * as Tokens from "./Tokens.js"

/** How to run a sandbox. Every option is optional. */
export interface SandboxOptions {
  /** The port of the API (and of the token endpoint unless `authPort` is set). Default 0: a free port. */
  readonly port?: number | undefined
  /**
   * The interface to listen on. Default `127.0.0.1`. One that is not a
   * loopback one (`0.0.0.0`) needs `adminKey`, and is logged as a warning.
   */
  readonly host?: string | undefined
  /**
   * `Host` names served besides `localhost`, `127.0.0.1`, `[::1]` and the
   * bound address (e.g. `gcx.test` for a name in /etc/hosts); others get 421.
   */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  /** When set, the token endpoint is served on its own server on this port (0: a free port), and only there. */
  readonly authPort?: number | undefined
  /** The stage segment of the quote paths. Default `sandbox`. */
  readonly stage?: string | undefined
  /** Multiplies every scenario duration: 0.01 makes the 2 s card complete in about 20 ms. Default 1. */
  readonly timeScale?: number | undefined
  /** The lifetime of access tokens, in seconds. Default 3600. */
  readonly tokenLifetimeSeconds?: number | undefined
  /** The key of the admin API (header `x-admin-key`). Default: a random one per start (`Service.adminKey`). */
  readonly adminKey?: string | Redacted.Redacted<string> | undefined
  /** The seed of the fault generator. Default 0. */
  readonly seed?: number | string | undefined
  /** The fault rules in force from the start. */
  readonly faults?: ReadonlyArray<Faults.FaultRule> | undefined
  /** The level each request is logged at (method, route, status). Default `Debug`; `None` silences it. */
  readonly logLevel?: LogLevel.LogLevel | undefined
  /**
   * How many transactions (with their idempotency records) are kept. Past it,
   * the oldest finished one is evicted first (the oldest one when none has
   * finished). Default 100,000.
   */
  readonly maxTransactions?: number | undefined
  /** How many dashboard event streams (`GET /__sandbox/events`) may be open at once; beyond, 503. Default 16. */
  readonly maxDashboardStreams?: number | undefined
  /** The partners. Default `TestData.partners`. */
  readonly partners?: ReadonlyArray<TestData.Partner> | undefined
  /** The product lines. Default `TestData.productLines`. */
  readonly productLines?: ReadonlyArray<TestData.ProductLine> | undefined
}

/** A running sandbox. */
export interface Service {
  /** The base URL of the API, e.g. `http://127.0.0.1:4010`. */
  readonly baseUrl: string
  /** The URL of the token endpoint's server: `baseUrl` unless `authPort` was set. */
  readonly authUrl: string
  readonly stage: string
  /** The key of the admin API: the one given, else drawn at random when the sandbox started. */
  readonly adminKey: string
  /** The address the API's server is bound to, `host:port`: `0.0.0.0:4010` where `baseUrl` says 127.0.0.1. */
  readonly boundAddress: string
  /** The `Host` names served besides the bound address: loopback names, the interface given, `allowedHosts`. */
  readonly hosts: ReadonlyArray<string>
  /** A snapshot of the request journal. */
  readonly journal: Effect.Effect<Journal.Journal>
  /** Every transaction, oldest first, as the admin API lists it. */
  readonly transactions: Effect.Effect<ReadonlyArray<Summary>>
  /** Replaces the fault rules (their counters restart and the generator is reseeded). */
  readonly setFaults: (rules: ReadonlyArray<Faults.FaultRule>) => Effect.Effect<void>
  /** Changes the lifetime of the tokens issued from now on. */
  readonly setTokenLifetime: (seconds: number) => Effect.Effect<void>
  /** Disables a partner (its calls answer exchange.partner.not.found) or enables it again. */
  readonly setPartnerEnabled: (clientId: string, enabled: boolean) => Effect.Effect<void>
  /** Clears transactions, requestIds, the journal and the faults; enables every partner; restores the token lifetime. */
  readonly reset: Effect.Effect<void>
}

/** The running sandbox. */
export class SandboxServer extends Context.Service<SandboxServer, Service>()("@gcx/sandbox/SandboxServer") {}

/** Options that cannot work, found before anything listens; the message says what to change. */
export class SandboxOptionsError extends Data.TaggedError("SandboxOptionsError")<{ readonly message: string }> {}

/** The variable that sets the admin key of `pnpm sandbox` and `gcx sandbox`. */
export const adminKeyVariable = AdminKey.variable

/** `GCX_SANDBOX_ADMIN_KEY`, when set. */
export const adminKeyConfig: Config.Config<Option.Option<Redacted.Redacted<string>>> = Config.option(
  Config.Redacted(adminKeyVariable)
)

const hostPort = (hostname: string, port: number): string => `${Hosts.bracketed(hostname)}:${port}`

/** The URL clients use: a wildcard address is reached through loopback. */
const urlOf = (address: NetAddress.SocketAddress): string => {
  if (address._tag === "UnixPathAddress") return `http://unix:${address.path}`
  const hostname = NetAddress.formatHost(address)
  const host = hostname === "0.0.0.0" ? "127.0.0.1" : hostname === "::" ? "::1" : hostname
  return `http://${hostPort(host, address.port)}`
}

/** The address a server is bound to, `host:port` (or the socket's path). */
const boundAddressOf = (address: NetAddress.SocketAddress): string =>
  address._tag === "UnixPathAddress" ? address.path : hostPort(NetAddress.formatHost(address), address.port)

/**
 * Starts a sandbox in the current scope; its servers stop when the scope
 * closes. Options that cannot work fail with `SandboxOptionsError` before
 * anything listens.
 */
export const make = (
  options: SandboxOptions = {}
): Effect.Effect<Service, ServeError | SandboxOptionsError, Scope.Scope> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    const { adminKey, hosts } = yield* Effect.mapError(
      Effect.all({
        hosts: Effect.fromResult(Hosts.served(host, options.allowedHosts ?? [])),
        adminKey: AdminKey.resolve(host, options.adminKey)
      }),
      (message) => new SandboxOptionsError({ message })
    )
    const config = SandboxConfig.of({
      stage: options.stage ?? TestData.stage,
      timeScale: options.timeScale ?? 1,
      adminKey,
      hosts,
      partners: options.partners ?? TestData.partners,
      productLines: options.productLines ?? TestData.productLines,
      maxDashboardStreams: options.maxDashboardStreams ?? Dashboard.defaultMaxStreams,
      requestLogLevel: options.logLevel ?? "Debug"
    })
    const recorder = yield* Journal.makeRecorder
    // The journal's indexes keep only the transactions the store keeps.
    const store = yield* Store.make({
      maxTransactions: options.maxTransactions,
      onEvict: (transaction) => recorder.unsafeForget(transaction.id)
    })
    const injector = yield* Faults.make({ seed: options.seed ?? 0, rules: options.faults ?? [] })
    const tokens = yield* Tokens.make({ lifetimeSeconds: options.tokenLifetimeSeconds ?? 3600 })
    const context = Context.make(SandboxConfig, config).pipe(
      Context.add(Store.Store, store),
      Context.add(Journal.Recorder, recorder),
      Context.add(Faults.FaultInjector, injector),
      Context.add(Tokens.Tokens, tokens)
    )
    const traced = yield* Server.isTraced
    const listen = (role: "all" | "api" | "auth", port: number) =>
      Effect.gen(function*() {
        const server = Http.createServer()
        const built = yield* Layer.build(
          Server.layer(role, server, { port, host }, traced).pipe(Layer.provide(Layer.succeedContext(context)))
        )
        // Runs before the server's own close, so that idle keep-alive sockets do not hold the shutdown.
        yield* Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections()))
        return Context.get(built, HttpServer.HttpServer).address
      })
    const api = yield* listen(options.authPort === undefined ? "all" : "api", options.port ?? 0)
    const baseUrl = urlOf(api)
    const authUrl = options.authPort === undefined ? baseUrl : urlOf(yield* listen("auth", options.authPort))
    const boundAddress = boundAddressOf(api)
    if (!Hosts.isLoopback(host)) {
      yield* Effect.logWarning(
        `the sandbox listens on ${boundAddress}, not a loopback address: other machines can reach it, ` +
          "and only its admin key guards /__sandbox/"
      )
    }
    return {
      baseUrl,
      authUrl,
      stage: config.stage,
      adminKey: config.adminKey,
      boundAddress,
      hosts,
      journal: recorder.snapshot,
      transactions: Effect.provide(State.transactions, context),
      setFaults: injector.set,
      setTokenLifetime: tokens.setLifetimeSeconds,
      setPartnerEnabled: store.setEnabled,
      reset: Effect.provide(State.reset, context)
    }
  })

export {
  /**
   * What a running sandbox prints for people: its addresses (and the one it is
   * bound to, when clients reach it by another), the `Host` names it serves, the
   * admin key, the test partners, the `GCX_*` variables that point gcx at it, the
   * product lines and the scenario cards. Only public test credentials and the
   * admin key appear in it.
   */
  banner,
  /**
   * What a client needs to talk to a running sandbox as one of its partners:
   * addresses, stage and credentials, shaped like `@gcx/http`'s
   * `ExchangeConfig.Options` (the sandbox does not depend on the client).
   */
  clientOptions,
  /**
   * The dashboard's URL with the admin key in its fragment (`#key=…`), which a
   * browser never sends: the page keeps the key in the tab and drops it from the URL.
   */
  dashboardUrl,
  /** The `GCX_*` variables that point gcx (`ExchangeClient.layerConfig`, the CLI) at a running sandbox as `partner`. */
  environment
} from "./internal/banner.js"

/** A layer that starts a sandbox and stops it when the layer's scope closes. Each use gets its own server and state. */
export const layer = (options: SandboxOptions = {}): Layer.Layer<SandboxServer, ServeError | SandboxOptionsError> =>
  Layer.effect(SandboxServer, make(options))
