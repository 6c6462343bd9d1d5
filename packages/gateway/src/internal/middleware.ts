/**
 * The router's global middleware of the gateway: what the `HttpApi` cannot
 * say. Unknown routes answer 404, another method on a route's path 405 (with
 * `Allow`), and defects 500, both with the gateway's
 * error body (never a stack trace); a 401 carries `WWW-Authenticate:
 * Bearer`; each request is counted and timed (`gcx.gateway.*` metrics) and
 * logged as its method, route, status and duration, nothing else (no header,
 * no body, no query: no card data and no key reaches a log). The duration runs
 * until the answer's headers: for an event stream opened before its quote's
 * first event, it includes the wait for that event (up to the 15 s
 * keep-alive); a request interrupted meanwhile (its client left) is neither
 * counted nor logged. Once the gateway drains (`drain.ts`), every answer
 * carries `Connection: close`.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Metrics from "@gcx/http/Metrics"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Result from "effect/Result"
import type * as Types from "effect/Types"
import * as GatewayErrors from "../GatewayErrors.js"
import * as Drain from "./drain.js"
import * as Prefer from "./prefer.js"

/** The routes of the gateway, as metrics and logs name them (a closed set: never an id). */
export type Route =
  | "submit"
  | "submit_wait"
  | "get"
  | "events"
  | "healthz"
  | "readyz"
  | "openapi"
  | "docs"
  | "other"

/**
 * How the router matches a path (`HttpRouter.serve`'s `routerConfig`): exactly, but for one
 * trailing slash. `/V1/QUOTES` and `/v1//quotes` are no route of the gateway's.
 */
export const routerConfig = {
  caseSensitive: true,
  ignoreDuplicateSlashes: false,
  ignoreTrailingSlash: true
} as const

/** The path of a request's target, as sent: without its query, and without the scheme and host of an absolute form. */
const targetPath = (url: string): string => url.split("?", 1)[0]!.replace(/^https?:\/\/[^/]*/i, "")

/** The path of a request's URL (`targetPath`), without a trailing slash (but the root's). */
const pathOf = (url: string): string => {
  const path = targetPath(url)
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path
}

/**
 * Whether the path of `url` (the target as the client sent it) is one the
 * gateway could serve as written: no `;`, no percent-escape, no `#` or backslash,
 * no `.` or `..` segment, no empty segment (`//`).
 * The router would read such paths as a route's (it cuts at `;`, decodes,
 * folds `//`), where a proxy in front may read them otherwise; the gateway's
 * paths never need them, so they are no route (404).
 */
export const isPlainPath = (url: string): boolean => !/[;%#\\]|\/\/|\/\.\.?(?:\/|$)/.test(targetPath(url))

/** A header's value as Node gives it (one string: Node joins repeated ones), if any. */
const headerOf = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.join(", ")

/**
 * The route of a request, by its method and path; a POST that asks to wait for its quote
 * (`Prefer: wait`, given as `prefer`) is `submit_wait`, so that its wait stays out of the
 * submits' durations.
 */
export const routeOf = (method: string, url: string, prefer?: string): Route => {
  const path = pathOf(url)
  if (path === "/v1/quotes") {
    if (method !== "POST") return "other"
    const wait = Prefer.parseWait(prefer)
    return Result.isSuccess(wait) && wait.success > 0 ? "submit_wait" : "submit"
  }
  if (/^\/v1\/quotes\/[^/]{1,100}$/.test(path)) return "get"
  if (/^\/v1\/quotes\/[^/]{1,100}\/events$/.test(path)) return "events"
  if (path === "/healthz" || path === "/readyz" || path === "/docs") return path.slice(1) as Route
  if (path === "/openapi.json") return "openapi"
  return "other"
}

/**
 * The methods a path of the gateway's routes is served for (as `Allow` says them), if the path is
 * one of them: a request with another method is answered 405 with them in `Allow`, not 404.
 */
export const allowedMethods = (url: string): "GET, HEAD" | "POST" | undefined => {
  const path = pathOf(url)
  if (path === "/v1/quotes") return "POST"
  return /^\/v1\/quotes\/[^/]{1,100}(?:\/events)?$/.test(path) || getPaths.has(path) ? "GET, HEAD" : undefined
}

const getPaths: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/docs", "/openapi.json"])

/** The family of `gcx.gateway.requests`. */
export const requestsFamily: Metrics.Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.gateway.requests", {
    description: "Requests answered by the gateway, by route and status",
    incremental: true,
    attributes
  })

/**
 * The buckets of `gcx.gateway.request.duration`: the HTTP client's, then up to a minute, for the
 * answers that wait (`submit_wait`, up to 30 s; an event stream's first events, up to 15 s).
 */
const durationBoundaries: ReadonlyArray<number> = [...Metrics.requestDurationBoundaries, 15, 20, 30, 45, 60]

/** The family of `gcx.gateway.request.duration`. */
export const requestDurationFamily: Metrics.Family<Metric.Histogram<number>> = (attributes) =>
  Metric.histogram("gcx.gateway.request.duration", {
    description: "Duration of the gateway's requests until their answer's headers, in seconds",
    boundaries: durationBoundaries,
    attributes
  })

const requestsByKey = Metrics.memoize((key) => {
  const [route, status] = key.split(" ") as [string, string]
  return Metrics.labelled(requestsFamily, { "gcx.gateway.route": route, "http.response.status_code": status })
})

const durationByRoute = Metrics.memoize((route) =>
  Metrics.labelled(requestDurationFamily, { "gcx.gateway.route": route })
)

const jsonError = (status: number, code: GatewayErrors.Code, message: string) =>
  HttpServerResponse.text(GatewayErrors.bodyOf(code, message), { status, contentType: "application/json" })

const notFound = jsonError(404, "not_found", "no such route")
const methodNotAllowed = (allow: string) =>
  HttpServerResponse.setHeader(
    jsonError(405, "method_not_allowed", `this route is served for ${allow} only`),
    "allow",
    allow
  )
const internal = jsonError(500, "internal", "internal error")

/** The pages answered as bytes made once, by the answer they replace (`/docs`: `HttpApiSwagger`'s, made once too). */
const sharedPages = new WeakMap<HttpServerResponse.HttpServerResponse, HttpServerResponse.HttpServerResponse>()

/**
 * `/docs`'s answer with its page (about 2 MB, Swagger UI inlined) as bytes
 * made once: Node writes those same bytes to every client. As text, each
 * answer was encoded anew, and a client that does not read held its own copy
 * until the connection's idle timeout.
 */
const shared = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (body._tag !== "Uint8Array" || body.text === undefined) return response
  let page = sharedPages.get(response)
  if (page === undefined) {
    page = HttpServerResponse.uint8Array(new TextEncoder().encode(body.text), {
      status: response.status,
      headers: response.headers,
      contentType: body.contentType
    })
    sharedPages.set(response, page)
  }
  return page
}

const isRouteNotFound = (cause: Cause.Cause<unknown>): boolean =>
  Option.match(Cause.findErrorOption(cause), {
    onNone: () => false,
    onSome: (error) => HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"
  })

/**
 * The middleware (see the module's doc). A connection that asks for one of
 * the large pages (`/docs`, `/openapi.json`) is given `idleMillis` without
 * progress (Node's socket timeout; 0: none), so that a client that stops
 * reading the page is cut off; the others get no timer (see `Gateway.Timeouts`).
 */
export const layer = (idleMillis: number) =>
  HttpRouter.middleware(
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const drain = yield* Drain.Draining
      return (
        app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>
      ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
        Effect.withFiber((fiber) => {
          const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
          const incoming = NodeHttpServerRequest.toIncomingMessage(request)
          // the target as sent: the platform resolves an absolute one (`http://host/a/../b`) into `request.url`
          const target = incoming.url ?? request.url
          const plain = isPlainPath(target)
          const route = plain ? routeOf(request.method, target, headerOf(incoming.headers.prefer)) : "other"
          if (idleMillis > 0 && (route === "docs" || route === "openapi")) incoming.socket.setTimeout(idleMillis)
          const startedAt = clock.currentTimeMillisUnsafe()
          const answered = (answer: HttpServerResponse.HttpServerResponse) => {
            const response = route === "docs" ? shared(answer) : answer
            const millis = clock.currentTimeMillisUnsafe() - startedAt
            requestsByKey(`${route} ${response.status}`).updateUnsafe(1, fiber.context)
            durationByRoute(route).updateUnsafe(millis / 1000, fiber.context)
            const challenged = response.status === 401
              ? HttpServerResponse.setHeader(response, "www-authenticate", "Bearer")
              : response
            // closing: the client sends its next request elsewhere (Node closes the connection after this answer);
            // and after a body too large, what is left of it is not read
            const final = drain.draining() || response.status === 413 || response.status === 415
              ? HttpServerResponse.setHeader(challenged, "connection", "close")
              : challenged
            // the line's effects only when it is logged: nothing to build per request below `Info`
            if (LogLevel.isGreaterThan(fiber.getRef(References.MinimumLogLevel), "Info")) return Effect.succeed(final)
            return Effect.as(
              Effect.logInfo("request").pipe(
                Effect.annotateLogs({ method: request.method, route, status: response.status, millis })
              ),
              final
            )
          }
          return (plain ? app : Effect.succeed(notFound)).pipe(
            Effect.catchCause((cause): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled> => {
              if (isRouteNotFound(cause)) {
                const allow = allowedMethods(request.url)
                return Effect.succeed(
                  allow === undefined || allow.split(", ").includes(request.method) ? notFound : methodNotAllowed(allow)
                )
              }
              if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<Types.unhandled>)
              // The defect itself is not logged: it might hold what a request carried.
              return Effect.as(Effect.logError("defect").pipe(Effect.annotateLogs({ route })), internal)
            }),
            Effect.flatMap(answered)
          )
        })
    }),
    { global: true }
  )
