/**
 * The middleware around the whole `SandboxApi`: what the HttpApi definition
 * cannot express. First, it answers 421 to a request whose `Host` is not one
 * of the sandbox's names (see `hosts.ts`), and does nothing else with it. It
 * serves the quote paths under the stage segment too, injects faults (some
 * act on the socket, which only the node request reaches), answers unknown
 * routes, decode failures and defects with an Error body (never a stack
 * trace), adds SVC-TRACE-ID to every answer it serves, journals each request
 * and logs its method, route and status, nothing else.
 *
 * It is the router's global middleware: it runs around the router itself, so
 * it sees unknown routes (the router's `RouteNotFound`) and every answer of
 * the API, the errors the API declares included (the API encodes them into
 * answers of their own status).
 */
import { Ids, Routes as Wire } from "@gcx/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as LogLevel from "effect/LogLevel"
import * as NetAddress from "effect/net/NetAddress"
import * as Option from "effect/Option"
import type * as Types from "effect/Types"
import * as Faults from "../Faults.js"
import * as Journal from "../Journal.js"
import * as Metrics from "../Metrics.js"
import { destroySocket, faultResponse, malformed, misdirected, notFound, serverError, unanswered } from "./answers.js"
import { SandboxConfig } from "./config.js"
import * as Hosts from "./hosts.js"
import * as Routes from "./routes.js"

const isRouteNotFound = (error: unknown): boolean =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"

/**
 * Answers what escaped the API: unknown routes (404) and defects (500). The
 * errors the API declares never get here: the API answers them itself.
 */
const answerCause = (route: Journal.Route) =>
(
  cause: Cause.Cause<unknown>
): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled> => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure) && isRouteNotFound(failure.value)) return Effect.succeed(notFound)
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<Types.unhandled>)
  return Effect.as(Effect.logError("Unexpected defect").pipe(Effect.annotateLogs({ route })), serverError)
}

const previousAttemptsOf = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d{1,9}$/.test(header.trim()) ? Number(header) : undefined

const requestIdHeader = Wire.Headers.requestId.toLowerCase()
const previousAttemptsHeader = Wire.Headers.previousAttempts.toLowerCase()

/** The journal entry of a request, from what it asked and how it was answered. No secrets are read. */
const entryOf = (
  time: DateTime.Utc,
  request: HttpServerRequest.HttpServerRequest,
  target: Routes.Target,
  decision: Faults.Decision,
  status: number | undefined,
  transactionId: string | undefined
): Journal.Entry => {
  const requestId = request.headers[requestIdHeader]
  const previousAttempts = previousAttemptsOf(request.headers[previousAttemptsHeader])
  const entry: { -readonly [K in keyof Journal.Entry]: Journal.Entry[K] } = {
    time,
    route: target.route,
    method: request.method,
    path: target.pathname
  }
  if (status !== undefined) entry.status = status
  if (requestId !== undefined) entry.requestId = requestId
  if (previousAttempts !== undefined) entry.previousAttempts = previousAttempts
  if (transactionId !== undefined) entry.transactionId = transactionId
  if (decision.injected.length > 0) entry.faults = decision.injected
  return entry
}

/**
 * Makes the request, for the rest of its fiber, the same request with the
 * stage segment left out of its URL, so that the platform's router finds the
 * endpoint (the node request keeps the URL as sent). A one-way update of the
 * fiber's context: nothing after the router needs the staged URL back, and
 * the server restores the context once the request is answered.
 */
const unstage = (
  fiber: Fiber.Fiber<unknown, unknown>,
  request: HttpServerRequest.HttpServerRequest,
  url: string
): void => {
  fiber.setContext(Context.add(fiber.context, HttpServerRequest.HttpServerRequest, request.modify({ url })))
}

/** How a fault shows in the request's log line instead of its status. */
const loggedStatus = (fault: Faults.FaultRule | undefined, status: number): string | number =>
  fault?.kind === "reset" ? "reset" : fault?.kind === "dropAnswer" ? "dropped" : status

/** The level a request line is logged at: `None` is no line at all. */
const severityOf = (level: LogLevel.LogLevel): LogLevel.Severity | undefined =>
  level === "None" ? undefined : level === "All" ? "Trace" : level

/** The address a server is bound to, as `Hosts.checker` takes it. */
const boundOf = (address: NetAddress.SocketAddress): { readonly hostname: string; readonly port: number } | undefined =>
  address._tag === "UnixPathAddress" ? undefined : { hostname: NetAddress.formatHost(address), port: address.port }

/**
 * The middleware of a server with the given role: the router's global
 * middleware (see the module's doc).
 *
 * It runs on every request, so its work is plain code inside the request's
 * fiber (`Effect.withFiber`) rather than a chain of effects: the clock is the
 * one the server's request fibers inherit (captured when the layer is built),
 * the fault decision is one effect only when rules are set, and the journal
 * entry, the metrics and the trace header are done in one step on the final
 * answer (on the middleware's own answer, or, when the request is interrupted
 * and the server answers for it, as a pre-response handler).
 */
export const layer = (role: Routes.Role) =>
  HttpRouter.middleware(
    Effect.gen(function*() {
      const config = yield* SandboxConfig
      const recorder = yield* Journal.Recorder
      const injector = yield* Faults.FaultInjector
      // Request fibers are forked from the context this layer is built in, so they see this same clock.
      const clock = yield* Clock.Clock
      const server = yield* HttpServer.HttpServer
      const bound = boundOf(server.address)
      const hostServed = bound === undefined ? () => true : Hosts.checker(config.hosts, bound)
      const classify = Routes.classifier(role, config.stage)
      const severity = severityOf(config.requestLogLevel)
      return (
        app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>
      ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> => {
        /** What happens to a request once its faults are decided. */
        const handle = (
          fiber: Fiber.Fiber<unknown, unknown>,
          request: HttpServerRequest.HttpServerRequest,
          target: Routes.Target,
          startedAt: number,
          decision: Faults.Decision
        ): Effect.Effect<
          HttpServerResponse.HttpServerResponse,
          Types.unhandled,
          HttpServerRequest.HttpServerRequest
        > => {
          const fault = Option.getOrUndefined(decision.answer)
          const traceId = Ids.makeRequestId()
          // Runs on the final answer, whoever produced it (the server's answer to an interrupted request included).
          const onResponse = (
            _: HttpServerRequest.HttpServerRequest,
            response: HttpServerResponse.HttpServerResponse
          ): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
            Effect.suspend(() => {
              if (fault?.kind === "dropAnswer") destroySocket(request)
              const status = fault?.kind === "reset" ? undefined : response.status
              const now = clock.currentTimeMillisUnsafe()
              const entry = entryOf(
                DateTime.makeUnsafe(now),
                request,
                target,
                decision,
                status,
                Journal.annotatedTransaction(request)
              )
              Metrics.unsafeRecord(target.route, status, decision.injected, fiber.context)
              const answer = fault?.kind === "reset" || fault?.kind === "dropAnswer"
                ? unanswered
                : fault?.kind === "malformed"
                ? malformed(HttpServerResponse.setHeader(response, Wire.Headers.traceId, traceId))
                : HttpServerResponse.setHeader(response, Wire.Headers.traceId, traceId)
              const recorded = Effect.as(recorder.record(entry), answer)
              if (severity === undefined) return recorded
              return Effect.andThen(
                Effect.logWithLevel(severity)("request").pipe(
                  Effect.annotateLogs({
                    method: request.method,
                    route: target.route,
                    status: loggedStatus(fault, response.status),
                    millis: now - startedAt
                  })
                ),
                recorded
              )
            })
          const answer = (): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled> => {
            if (!target.served) return Effect.succeed(notFound)
            switch (fault?.kind) {
              case "reset":
                return Effect.sync(() => {
                  destroySocket(request)
                  return unanswered
                })
              case "status503":
              case "status500":
                return Effect.succeed(faultResponse(fault))
            }
            if (target.url !== request.url) unstage(fiber, request, target.url)
            return Effect.catchCause(app, answerCause(target.route))
          }
          // An answer that leaves the middleware is the final one: it is finished here. Only an
          // interruption leaves it as a failure; the server answers it after the middleware, so only
          // then is `onResponse` registered to finish that answer.
          return Effect.matchCauseEffect(
            decision.delayMillis > 0
              ? Effect.andThen(Effect.interruptible(Effect.sleep(decision.delayMillis)), Effect.suspend(answer))
              : Effect.suspend(answer),
            {
              onSuccess: (response) => onResponse(request, response),
              onFailure: (cause) =>
                Effect.andThen(HttpEffect.appendPreResponseHandler(onResponse), Effect.failCause(cause))
            }
          )
        }
        return Effect.withFiber((fiber) => {
          const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
          if (!hostServed(request.headers.host)) {
            return severity === undefined ? Effect.succeed(misdirected) : Effect.as(
              Effect.logWithLevel(severity)("misdirected request").pipe(
                Effect.annotateLogs({ method: request.method, status: 421 })
              ),
              misdirected
            )
          }
          const startedAt = clock.currentTimeMillisUnsafe()
          const target = classify(request.method, request.url)
          return target.served
            ? Effect.flatMap(
              injector.decide(target.route),
              (decision) => handle(fiber, request, target, startedAt, decision)
            )
            : handle(fiber, request, target, startedAt, Faults.none)
        })
      }
    }),
    { global: true }
  )
