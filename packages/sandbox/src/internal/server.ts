/**
 * One HTTP server of the sandbox: the `SandboxApi` routes (`HttpApiBuilder`),
 * the docs and the dashboard on one router, served by `HttpRouter.serve` on a
 * node server, with the sandbox's middleware (`middleware.ts`) around the
 * router.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import { constTrue } from "effect/Function"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiSwagger from "effect/http-api/HttpApiSwagger"
import * as Headers from "effect/http/Headers"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as Layer from "effect/Layer"
import type * as Http from "node:http"
import { adminKeyHeader, SandboxApi } from "../Api.js"
import { AdminAuthorizationLive, AdminLive } from "./admin.js"
import { AuthLive } from "./auth.js"
import * as Dashboard from "./dashboard.js"
import { AuthorizationLive, ExchangeLive, SchemaErrorsLive } from "./exchange.js"
import * as Favicon from "./favicon.js"
import * as Middleware from "./middleware.js"
import * as Routes from "./routes.js"

/** The API's routes, `/openapi.json` among them, with the handlers and the API's middleware. */
const ApiLive = HttpApiBuilder.layer(SandboxApi, { openapiPath: Routes.extraPaths.openApi }).pipe(
  Layer.provide([AuthLive, ExchangeLive, AdminLive]),
  Layer.provide([AuthorizationLive, AdminAuthorizationLive, SchemaErrorsLive])
)

/** The `/docs` page (Swagger UI, its assets inlined: no CDN), the dashboard and the icon. */
const DocsLive = Layer.mergeAll(
  HttpApiSwagger.layer(SandboxApi, { path: Routes.extraPaths.docs }),
  Dashboard.layer,
  Favicon.layer
)

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
 * The server's request fibers inherit the context the layer is built in, so
 * `Headers.CurrentRedactedNames` is extended there, and the platform's server
 * spans record the request and response headers (`http.request.header.*`;
 * opt-in since Effect 4), `secretHeaderNames` as redacted. Server spans are
 * made only when `traced` (see `isTraced`).
 */
export const layer = (
  role: Routes.Role,
  server: Http.Server,
  listen: { readonly port: number; readonly host: string },
  traced: boolean
) =>
  HttpRouter.serve(
    Layer.mergeAll(ApiLive, role === "auth" ? Layer.empty : DocsLive, Middleware.layer(role)),
    // The middleware logs each request itself (or not at all), and `Sandbox.banner` says where it listens.
    { disableLogger: true, disableListenLog: true }
  ).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => server, listen)),
    Layer.updateService(Headers.CurrentRedactedNames, withSecretHeaderNames),
    // Without a tracer of its own, a server span per request is work for nothing.
    Layer.provide(
      traced
        ? Layer.succeed(HttpMiddleware.TracerHeaderFilter, constTrue)
        : Layer.succeed(HttpMiddleware.TracerDisabledWhen, constTrue)
    )
  )

/** The tracer a runtime has when nobody installed one: its spans go nowhere. */
const defaultTracer = Effect.runSync(Effect.tracer)

/** Whether the current fiber has a tracer of its own (`Tracer.Tracer` provided, OpenTelemetry), whose spans are kept. */
export const isTraced: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== defaultTracer)
