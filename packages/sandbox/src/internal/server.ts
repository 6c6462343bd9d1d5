import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Headers from "@effect/platform/Headers"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as Effect from "effect/Effect"
import { constTrue, identity } from "effect/Function"
import * as Layer from "effect/Layer"
import type * as Http from "node:http"
import { adminKeyHeader, SandboxApi } from "../Api.js"
import { AdminAuthorizationLive, AdminLive } from "./admin.js"
import { AuthLive } from "./auth.js"
import * as Dashboard from "./dashboard.js"
import { AuthorizationLive, ExchangeLive } from "./exchange.js"
import * as Middleware from "./middleware.js"
import * as Routes from "./routes.js"

const ApiLive = HttpApiBuilder.api(SandboxApi).pipe(
  Layer.provide([AuthLive, ExchangeLive, AdminLive]),
  Layer.provide([AuthorizationLive, AdminAuthorizationLive])
)

/** `/openapi.json`, the `/docs` page (Swagger UI, its assets inlined: no CDN) and the dashboard. */
const DocsLive = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: Routes.extraPaths.openApi }),
  HttpApiSwagger.layer({ path: Routes.extraPaths.docs }),
  Dashboard.layer
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
  HttpApiBuilder.serve().pipe(
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
