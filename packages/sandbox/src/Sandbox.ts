/**
 * The sandbox server: a stateful simulator of the whole partner service over
 * real HTTP, as a scoped service. `layer` starts it (on a free port by
 * default) and stops it when the layer's scope closes.
 */
import type * as HttpServer from "@effect/platform/HttpServer"
import { HttpServer as HttpServerTag } from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import { Routes } from "@gcx/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import { adminKeyHeader, adminPrefix } from "./Api.js"
import * as Faults from "./Faults.js"
import { SandboxConfig } from "./internal/config.js"
import * as Dashboard from "./internal/dashboard.js"
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
  /** The interface to listen on. Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** When set, the token endpoint is served on its own server on this port (0: a free port), and only there. */
  readonly authPort?: number | undefined
  /** The stage segment of the quote paths. Default `sandbox`. */
  readonly stage?: string | undefined
  /** Multiplies every scenario duration: 0.01 makes the 2 s card complete in about 20 ms. Default 1. */
  readonly timeScale?: number | undefined
  /** The lifetime of access tokens, in seconds. Default 3600. */
  readonly tokenLifetimeSeconds?: number | undefined
  /** The key of the admin API (header `x-admin-key`). Default `TestData.adminKey`. */
  readonly adminKey?: string | undefined
  /** The seed of the fault generator. Default 0. */
  readonly seed?: number | string | undefined
  /** The fault rules in force from the start. */
  readonly faults?: ReadonlyArray<Faults.FaultRule> | undefined
  /** The level each request is logged at (method, route, status). Default `Debug`; `None` silences it. */
  readonly logLevel?: LogLevel.Literal | undefined
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
  readonly adminKey: string
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
export class SandboxServer extends Context.Tag("@gcx/sandbox/SandboxServer")<SandboxServer, Service>() {}

const urlOf = (address: HttpServer.Address): string => {
  if (address._tag === "UnixAddress") return `http://unix:${address.path}`
  const host = address.hostname === "0.0.0.0" ? "127.0.0.1" : address.hostname
  return `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`
}

/** Starts a sandbox in the current scope; its servers stop when the scope closes. */
export const make = (options: SandboxOptions = {}): Effect.Effect<Service, ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const config = SandboxConfig.of({
      stage: options.stage ?? TestData.stage,
      timeScale: options.timeScale ?? 1,
      adminKey: options.adminKey ?? TestData.adminKey,
      partners: options.partners ?? TestData.partners,
      productLines: options.productLines ?? TestData.productLines,
      maxDashboardStreams: options.maxDashboardStreams ?? Dashboard.defaultMaxStreams,
      requestLogLevel: LogLevel.fromLiteral(options.logLevel ?? "Debug")
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
    const host = options.host ?? "127.0.0.1"
    const traced = yield* Server.isTraced
    const listen = (role: "all" | "api" | "auth", port: number) =>
      Effect.gen(function*() {
        const server = Http.createServer()
        const built = yield* Layer.build(
          Server.layer(role, server, { port, host }, traced).pipe(Layer.provide(Layer.succeedContext(context)))
        )
        // Runs before the server's own close, so that idle keep-alive sockets do not hold the shutdown.
        yield* Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections()))
        return urlOf(Context.get(built, HttpServerTag).address)
      })
    const baseUrl = yield* listen(options.authPort === undefined ? "all" : "api", options.port ?? 0)
    const authUrl = options.authPort === undefined ? baseUrl : yield* listen("auth", options.authPort)
    return {
      baseUrl,
      authUrl,
      stage: config.stage,
      adminKey: config.adminKey,
      journal: recorder.snapshot,
      transactions: Effect.provide(State.transactions, context),
      setFaults: injector.set,
      setTokenLifetime: tokens.setLifetimeSeconds,
      setPartnerEnabled: store.setEnabled,
      reset: Effect.provide(State.reset, context)
    }
  })

/**
 * What a client needs to talk to a running sandbox as one of its partners:
 * addresses, stage and credentials, shaped like `@gcx/http`'s
 * `ExchangeConfig.Options` (the sandbox does not depend on the client).
 */
export const clientOptions = (
  server: Pick<Service, "baseUrl" | "authUrl" | "stage">,
  partner: TestData.Partner = TestData.partner
) => ({
  environment: "custom" as const,
  baseUrl: server.baseUrl,
  authUrl: server.authUrl,
  stage: server.stage,
  clientId: partner.clientId,
  clientSecret: partner.clientSecret,
  apiKey: partner.apiKey
})

const exportLines = (variables: Record<string, string>): ReadonlyArray<string> => {
  const assignments = Object.entries(variables).map(([name, value]) => `${name}=${value}`)
  return [`  export ${assignments.slice(0, 4).join(" ")}`, `  export ${assignments.slice(4).join(" ")}`]
}

/** The `GCX_*` variables that point gcx (`ExchangeClient.layerConfig`, the CLI) at a running sandbox as `partner`. */
export const environment = (
  server: Pick<Service, "baseUrl" | "authUrl" | "stage">,
  partner: TestData.Partner = TestData.partner
): Record<string, string> => {
  const options = clientOptions(server, partner)
  return {
    GCX_ENV: options.environment,
    GCX_BASE_URL: options.baseUrl,
    GCX_AUTH_URL: options.authUrl,
    GCX_STAGE: options.stage,
    GCX_CLIENT_ID: options.clientId,
    GCX_CLIENT_SECRET: options.clientSecret,
    GCX_API_KEY: options.apiKey
  }
}

/**
 * What a running sandbox prints for people: its addresses, the admin key, the
 * test partners, the `GCX_*` variables that point gcx at it, the product lines
 * and the scenario cards. Only public test credentials appear in it.
 */
export const banner = (server: Service): string =>
  [
    "gcx sandbox is running",
    `  API          ${server.baseUrl}`,
    `  Quote        ${server.baseUrl}${Routes.quotePath(server.stage)} (also without /${server.stage})`,
    `  Token        ${server.authUrl}${Routes.tokenPath}`,
    `  OpenAPI      ${server.baseUrl}/openapi.json`,
    `  Docs         ${server.baseUrl}/docs`,
    `  Dashboard    ${server.baseUrl}${adminPrefix}/ui  (admin key: ${server.adminKey})`,
    `  Admin        ${server.baseUrl}${adminPrefix}/  (${adminKeyHeader}: ${server.adminKey})`,
    "Test partners (client_id / client_secret / x-api-key):",
    ...TestData.partners.map((partner) =>
      `  ${partner.clientId} / ${partner.clientSecret} / ${partner.apiKey}${
        partner.agent === undefined ? "" : "  (human-based balance inquiries)"
      }`
    ),
    "Point gcx at it (the first test partner):",
    ...exportLines(environment(server)),
    `Product lines: ${TestData.productLines.map((line) => line.id).join(", ")}`,
    `Cards (any PIN; PIN ${TestData.rejectedPin} always gives exchange.invalid.card):`,
    ...Object.entries(TestData.Cards).map(([name, number]) => `  ${number}  ${name}`),
    "  any other         success, balance derived from the number",
    "Press Ctrl+C to stop."
  ].join("\n")

/** A layer that starts a sandbox and stops it when the layer's scope closes. Each use gets its own server and state. */
export const layer = (options: SandboxOptions = {}): Layer.Layer<SandboxServer, ServeError> =>
  Layer.scoped(SandboxServer, make(options))
