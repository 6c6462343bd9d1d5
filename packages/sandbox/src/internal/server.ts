import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as Layer from "effect/Layer"
import type * as Http from "node:http"
import { SandboxApi } from "../Api.js"
import { AdminAuthorizationLive, AdminLive } from "./admin.js"
import { AuthLive } from "./auth.js"
import { AuthorizationLive, ExchangeLive } from "./exchange.js"
import * as Middleware from "./middleware.js"

const ApiLive = HttpApiBuilder.api(SandboxApi).pipe(
  Layer.provide([AuthLive, ExchangeLive, AdminLive]),
  Layer.provide([AuthorizationLive, AdminAuthorizationLive])
)

/** `/openapi.json` and the `/docs` page (Swagger UI, its assets inlined: no CDN). */
const DocsLive = Layer.mergeAll(HttpApiBuilder.middlewareOpenApi(), HttpApiSwagger.layer({ path: "/docs" }))

/**
 * One HTTP server of the sandbox with the given role, listening on the given
 * node server. Build it with `Layer.build`, which gives it its own router.
 */
export const layer = (
  role: Middleware.Role,
  server: Http.Server,
  listen: { readonly port: number; readonly host: string }
) =>
  HttpApiBuilder.serve().pipe(
    Layer.provide(role === "auth" ? Layer.empty : DocsLive),
    Layer.provide(Middleware.layer(role)),
    Layer.provide(ApiLive),
    Layer.provideMerge(NodeHttpServer.layer(() => server, listen))
  )
