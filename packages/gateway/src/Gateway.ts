/**
 * `gcx serve`'s server: `GatewayApi` on a node HTTP server, with the docs page
 * (`/docs`, Swagger UI, assets inlined), the OpenAPI document
 * (`/openapi.json`), the health endpoints and the gateway's middleware (404
 * and 500 with the gateway's error body, `gcx.gateway.*` metrics, one log
 * line per request without headers or bodies).
 *
 * It runs over the services of a deployment: `GatewayQuotes` (over
 * `DurableQuotes`, `EventLog` and the database), `ApiKeys`, `RateLimit`, the
 * database (`SqlClient`, for `/readyz`) and the exchange client (whose
 * heartbeat `/readyz` watches). Spans and metrics go wherever the
 * `@gcx/http/Telemetry` layers in context send them: the gateway's spans are
 * `gcx.gateway.submit` and `gcx.gateway.view` (under the platform's server
 * span), its metrics `gcx.gateway.requests` and `gcx.gateway.request.duration`.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import type * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as EventLog from "@gcx/workflow/EventLog"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiSwagger from "effect/http-api/HttpApiSwagger"
import * as Headers from "effect/http/Headers"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Http from "node:http"
import type { ApiKeys } from "./ApiKeys.js"
import { GatewayApi, paths } from "./GatewayApi.js"
import * as GatewayQuotes from "./GatewayQuotes.js"
import * as Drain from "./internal/drain.js"
import * as Handlers from "./internal/handlers.js"
import * as KeepAlives from "./internal/keepAlives.js"
import * as Middleware from "./internal/middleware.js"
import * as Readiness from "./internal/readiness.js"
import type { RateLimit } from "./RateLimit.js"

export {
  /** The family of `gcx.gateway.request.duration` (seconds, by route). */
  requestDurationFamily,
  /** The family of `gcx.gateway.requests` (by route and status). */
  requestsFamily,
  /** The routes of the gateway, as its metrics and logs name them. */
  type Route
} from "./internal/middleware.js"

/** Where `gcx serve` listens unless told. */
export const defaults = { host: "127.0.0.1", port: 8790 } as const

/** The environment variable of the port. */
export const portVariable = "GCX_GATEWAY_PORT"

/**
 * How long the server waits on a client, in milliseconds (Node's server
 * settings), so that a client that stalls holds no connection for long:
 * - `headers`: for a request's headers (`headersTimeout`; Node's default 60 s);
 * - `request`: for a whole request, its body included (`requestTimeout`; 300 s);
 * - `idle`: on a connection that asked for one of the large pages (`/docs`,
 *   `/openapi.json`), how long nothing may move either way: a client that
 *   stops reading the page is cut off after it. The other answers are small
 *   (Node writes them whole), and event streams end with their quote: they
 *   have no timer of their own (about 1 KB of heap per open stream).
 */
export interface Timeouts {
  readonly headers: number
  readonly request: number
  readonly idle: number
}

/** The gateway's `Timeouts`: 20 s for headers, 30 s for a request, 60 s idle. */
export const defaultTimeouts: Timeouts = { headers: 20_000, request: 30_000, idle: 60_000 }

/** Settings of the server. */
export interface Options extends Readiness.Options {
  /** The port; 0 for a free one. Default 8790. */
  readonly port?: number | undefined
  /** The interface. Default 127.0.0.1. */
  readonly host?: string | undefined
  /** How long it waits on a client (see `Timeouts`). Default `defaultTimeouts`. */
  readonly timeouts?: Partial<Timeouts> | undefined
  /**
   * How many open event streams and waiting POSTs (`Prefer: wait`) one API key may hold at once on
   * this gateway: past it, a stream that would follow its quote is refused (429, `Retry-After: 15`)
   * and a POST does not wait. A whole number above 0 (anything else is a defect). Default 1,000
   * (`layerConfig`: `GCX_GATEWAY_MAX_HELD_PER_KEY`).
   */
  readonly maxHeldPerKey?: number | undefined
}

/** What the server needs from its deployment. */
export type Requirements =
  | GatewayQuotes.GatewayQuotes
  | ApiKeys
  | RateLimit
  | EventLog.EventLog
  | SqlClient.SqlClient
  | ExchangeClient.ExchangeClient

/** The API's routes, `/openapi.json` among them, with the handlers and the API's middleware. */
const ApiLive = HttpApiBuilder.layer(GatewayApi, { openapiPath: paths.openApi }).pipe(
  Layer.provide([Handlers.QuotesLive, Handlers.HealthLive]),
  Layer.provide([Handlers.AuthorizationLive, Handlers.SchemaErrorsLive])
)

/** The request headers whose values never reach a span or a log. */
const secretHeaders = ["authorization", "cookie"]

/**
 * The server, listening on `options.host:options.port`, until the layer is
 * closed. Its output is the `HttpServer` (its bound address). Closing it
 * drains the server first: open event streams end (their clients resume
 * with `Last-Event-ID`), answers carry `Connection: close`, idle connections
 * are closed, and requests in flight are answered.
 */
export const layer = (
  options: Options = {}
): Layer.Layer<HttpServer.HttpServer, ServeError, Requirements> =>
  Layer.unwrap(Effect.gen(function*() {
    const maxHeld = options.maxHeldPerKey ?? KeepAlives.defaultMaxHeld
    if (!(Number.isInteger(maxHeld) && maxHeld > 0)) {
      return yield* Effect.die(new Error(`Gateway: maxHeldPerKey must be a whole number above 0, not ${maxHeld}`))
    }
    const timeouts = { ...defaultTimeouts, ...options.timeouts }
    // Node refuses headers longer than the request (both set): the headers' wait is at most the request's
    const headersTimeout = timeouts.request > 0 ? Math.min(timeouts.headers, timeouts.request) : timeouts.headers
    const checked = [headersTimeout, timeouts.request].filter((millis) => millis > 0)
    const server = Http.createServer({
      headersTimeout,
      requestTimeout: timeouts.request,
      // how often Node checks the two above: at least as often as the shorter one (its default, 30 s, at most)
      connectionsCheckingInterval: Math.min(30_000, ...checked)
    })
    // its finalizer, added first, runs after the server has closed
    const { drain, start } = yield* Drain.make(server)
    const serving = HttpRouter.serve(
      // the idle timeout on the large pages only (see `Timeouts`): a timer per connection would weigh on every
      // open event stream
      Layer.mergeAll(ApiLive, HttpApiSwagger.layer(GatewayApi, { path: paths.docs }), Middleware.layer(timeouts.idle)),
      // The middleware logs each request itself, without its URL's query or any header.
      { disableLogger: true, disableListenLog: true, routerConfig: Middleware.routerConfig }
    ).pipe(
      Layer.provide(Readiness.layer(options)),
      Layer.provideMerge(
        NodeHttpServer.layer(() => server, {
          port: options.port ?? defaults.port,
          host: options.host ?? defaults.host
        })
      ),
      Layer.provide(Layer.succeed(Drain.Draining, drain)),
      Layer.provide(Layer.succeed(KeepAlives.MaxHeld, maxHeld)),
      Layer.updateService(Headers.CurrentRedactedNames, (names) => [...names, ...secretHeaders])
    )
    // built last, so closed first: the drain starts before the server waits for its connections
    const drainFirst = Layer.effectDiscard(Effect.flatMap(EventLog.EventLog, (log) =>
      Effect.addFinalizer(() =>
        Effect.andThen(start, Effect.sync(() => KeepAlives.wakeAll(log)))
      )))
    return drainFirst.pipe(Layer.provideMerge(serving))
  }))

/** The port of `GCX_GATEWAY_PORT`, default 8790. */
export const portConfig: Config.Config<number> = Config.schema(
  Schema.NumberFromString.check(
    Schema.makeFilter((port: number) =>
      (Number.isInteger(port) && port >= 0 && port <= 65535) || `${portVariable} must be a port, 0 to 65535`
    )
  ),
  portVariable
).pipe(Config.withDefault(defaults.port))

/** The variable of how many open streams and waiting POSTs one API key may hold (`Options.maxHeldPerKey`). */
export const maxHeldVariable = "GCX_GATEWAY_MAX_HELD_PER_KEY"

/** `GCX_GATEWAY_MAX_HELD_PER_KEY`: a whole number of at least 1, default 1,000. */
export const maxHeldConfig: Config.Config<number> = Config.schema(
  Schema.NumberFromString.check(
    Schema.makeFilter((count: number) =>
      (Number.isInteger(count) && count >= 1) || `${maxHeldVariable} must be a whole number of at least 1`
    )
  ),
  maxHeldVariable
).pipe(Config.withDefault(KeepAlives.defaultMaxHeld))

/**
 * The server with its `GatewayQuotes` (quote ids from `GCX_DATA_KEY` and
 * `GCX_DATA_KEY_PREVIOUS`; `UnknownDataKey` when the database's are of neither),
 * listening on `options.port` or `GCX_GATEWAY_PORT` (default 8790), each API
 * key holding at most `options.maxHeldPerKey` or `GCX_GATEWAY_MAX_HELD_PER_KEY`
 * (default 1,000) open streams and waiting POSTs.
 */
export const layerConfig = (options: Options = {}): Layer.Layer<
  HttpServer.HttpServer,
  ServeError | Config.ConfigError | SqlError.SqlError | GatewayQuotes.UnknownDataKey,
  Exclude<Requirements, GatewayQuotes.GatewayQuotes> | DurableQuotes.DurableQuotes
> =>
  Layer.unwrap(
    Effect.map(
      Effect.all([
        options.port === undefined ? portConfig : Effect.succeed(options.port),
        options.maxHeldPerKey === undefined ? maxHeldConfig : Effect.succeed(options.maxHeldPerKey)
      ]),
      ([port, maxHeldPerKey]) => layer({ ...options, port, maxHeldPerKey })
    )
  ).pipe(Layer.provide(GatewayQuotes.layerConfig))
