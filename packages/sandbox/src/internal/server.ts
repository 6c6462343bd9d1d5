import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Etag from "@effect/platform/Etag"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Headers from "@effect/platform/Headers"
import type * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpPlatform from "@effect/platform/HttpPlatform"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Path from "@effect/platform/Path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { constTrue, identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type * as Http from "node:http"
import { adminKeyHeader, SandboxApi } from "../Api.js"
import * as Faults from "../Faults.js"
import * as Journal from "../Journal.js"
import { Store } from "../Store.js"
import { Tokens } from "../Tokens.js"
import { AdminAuthorizationLive, AdminLive } from "./admin.js"
import { AuthLive } from "./auth.js"
import { SandboxConfig } from "./config.js"
import * as Dashboard from "./dashboard.js"
import { AuthorizationLive, ExchangeLive } from "./exchange.js"
import * as Middleware from "./middleware.js"
import * as Routes from "./routes.js"

const ApiLayers = HttpApiBuilder.api(SandboxApi).pipe(
  Layer.provide([AuthLive, ExchangeLive, AdminLive]),
  Layer.provide([AuthorizationLive, AdminAuthorizationLive])
)

/** The services the API's handlers and security middleware are built with. */
type ApiServices = SandboxConfig | Store | Journal.Recorder | Faults.FaultInjector | Tokens

const apiServices = Context.pick(SandboxConfig, Store, Journal.Recorder, Faults.FaultInjector, Tokens)

/**
 * The API's groups with their handlers, built in `ApiServices` only.
 * `HttpApiBuilder.group` merges the context a group was built in into the
 * context of each of its requests, so a group built in the whole context of
 * the layers above it (two dozen entries) would copy all of them per request.
 * They are built with the layers' memo map, so that the router they add their
 * routes to is the one served.
 */
const ApiLive: Layer.Layer<HttpApi.Api, never, ApiServices> = Layer.scopedContext(
  Effect.flatMap(Effect.context<ApiServices | Scope.Scope>(), (context) => {
    const build: Effect.Effect<Context.Context<HttpApi.Api>, never, ApiServices> = Layer.buildWithMemoMap(
      ApiLayers,
      Context.get(context, Layer.CurrentMemoMap),
      Context.get(context, Scope.Scope)
    )
    return Effect.mapInputContext(
      build,
      (_: Context.Context<never>): Context.Context<ApiServices> => apiServices(context)
    )
  })
)

/** `/openapi.json`, the `/docs` page (Swagger UI, its assets inlined: no CDN) and the dashboard. */
const DocsLive = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: Routes.extraPaths.openApi }),
  HttpApiSwagger.layer({ path: Routes.extraPaths.docs }),
  Dashboard.layer
)

/** The services a request fiber may need: the server's default ones (files, etags) and its scope. */
const requestServices = Context.pick(
  HttpServer.HttpServer,
  HttpPlatform.HttpPlatform,
  Etag.Generator,
  FileSystem.FileSystem,
  Path.Path,
  Scope.Scope
)

/**
 * `HttpApiBuilder.serve()` (the app `HttpApiBuilder.httpApp` builds from
 * `SandboxApi`, its router and its middleware), with lean request fibers:
 * they are forked from the context they are served in, and
 * `HttpApiBuilder.serve()` serves in the whole context of the layers above
 * it (every sandbox service, node's platform services, the API's tags: two
 * dozen entries). Each context change in a request (the request itself, its
 * scope, the route, the caller) copies and compares the whole context, so the
 * app is served in `requestServices` only; the handlers and the middleware
 * took what they use from the layers when they were built.
 */
const serveApi: Layer.Layer<never, never, HttpServer.HttpServer | HttpRouter.HttpRouter.DefaultServices | HttpApi.Api> =
  Layer.scopedDiscard(
    Effect.flatMap(
      Effect.zip(
        HttpApiBuilder.httpApp,
        Effect.context<HttpServer.HttpServer | HttpRouter.HttpRouter.DefaultServices | Scope.Scope>()
      ),
      ([app, context]) =>
        Effect.mapInputContext(HttpServer.serveEffect(app), (_: Context.Context<never>) => requestServices(context))
    )
  ).pipe(Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]))

/**
 * The request headers whose values never reach a span or a log: the caller's
 * credentials (bearer token, API key, Basic secret) and the admin key.
 */
export const secretHeaderNames: ReadonlyArray<string> = ["authorization", "x-api-key", adminKeyHeader]

/** `names` with every secret header name added (`Headers.redact` matches names case-insensitively). */
const withSecretHeaderNames = (names: ReadonlyArray<string | RegExp>): ReadonlyArray<string | RegExp> => [
  ...names,
  ...secretHeaderNames.filter((secret) =>
    !names.some((name) => typeof name === "string" ? name.toLowerCase() === secret : name.test(secret))
  )
]

/**
 * One HTTP server of the sandbox with the given role, listening on the given
 * node server. Build it with `Layer.build`, which gives it its own router.
 *
 * The server's request fibers inherit the fiber refs of the layer's build, so
 * `Headers.currentRedactedNames` is extended there: the platform's server
 * spans (`http.request.header.*`) show `secretHeaderNames` as redacted.
 * Server spans are made only when `traced` (see `isTraced`).
 */
export const layer = (
  role: Routes.Role,
  server: Http.Server,
  listen: { readonly port: number; readonly host: string },
  traced: boolean
) =>
  serveApi.pipe(
    Layer.provide(role === "auth" ? Layer.empty : DocsLive),
    Layer.provide(Middleware.layer(role)),
    Layer.provide(ApiLive),
    Layer.provideMerge(NodeHttpServer.layer(() => server, listen)),
    Layer.locallyWith(Headers.currentRedactedNames, withSecretHeaderNames),
    // Without a tracer of its own, a server span per request is work for nothing.
    traced ? identity : Layer.locally(HttpMiddleware.currentTracerDisabledWhen, constTrue)
  )

/** The tracer a runtime has when nobody installed one: its spans go nowhere. */
const defaultTracer = Effect.runSync(Effect.tracer)

/** Whether the current fiber has a tracer of its own (`Layer.setTracer`, OpenTelemetry), whose spans are kept. */
export const isTraced: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== defaultTracer)
