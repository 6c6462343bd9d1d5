/**
 * The middleware around the whole `SandboxApi`: what the HttpApi definition
 * cannot express. It serves the quote paths under the stage segment too,
 * injects faults (some act on the socket, which only the node request
 * reaches), answers unknown routes, decode failures and defects with an Error
 * body (never a stack trace), adds SVC-TRACE-ID to every answer, journals each
 * request and logs its method, route and status, nothing else.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { ErrorBody, Ids, Routes as Wire } from "@gcx/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Faults from "../Faults.js"
import * as Journal from "../Journal.js"
import * as Metrics from "../Metrics.js"
import { SandboxConfig } from "./config.js"
import * as Routes from "./routes.js"

const encodeErrorBody = Schema.encodeSync(ErrorBody.ErrorBody)

/** An answer with an Error body (spec 2.4). */
export const errorResponse = (
  status: number,
  body: { readonly ErrorCode: string; readonly Message: string },
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(encodeErrorBody(new ErrorBody.ErrorBody(body)), { status, headers })

const notFound = errorResponse(404, {
  ErrorCode: ErrorBody.ErrorCodes.routeNotFound,
  Message: "No route matches this method and path"
})

const serverError = errorResponse(500, {
  ErrorCode: ErrorBody.ErrorCodes.serverError,
  Message: "Internal server error"
})

const faultResponse = (rule: Faults.FaultRule): HttpServerResponse.HttpServerResponse =>
  rule.kind === "status503"
    ? errorResponse(
      503,
      { ErrorCode: ErrorBody.ErrorCodes.serviceUnavailable, Message: "The service is unavailable" },
      rule.retryAfterSeconds === undefined ? {} : { [Wire.Headers.retryAfter]: String(rule.retryAfterSeconds) }
    )
    : serverError

/** Destroys the connection under a request, so that the client gets no answer at all. */
const destroySocket = (request: HttpServerRequest.HttpServerRequest): void => {
  NodeHttpServerRequest.toIncomingMessage(request).socket.destroy()
}

/** The answer that a destroyed socket swallows; empty, so that writing it never waits on the socket. */
const unanswered = HttpServerResponse.empty()

/** Keeps status and headers but cuts the JSON body in half, as a broken proxy would. */
const malformed = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const bytes = response.body._tag === "Uint8Array" ? response.body.body : new TextEncoder().encode("{}")
  return HttpServerResponse.setBody(
    response,
    HttpBody.uint8Array(bytes.slice(0, Math.max(1, Math.floor(bytes.length / 2))), "application/json")
  )
}

/** Answers what escaped the API: unknown routes (404), header and path decode failures (400) and defects (500). */
const answerCause = (route: Journal.Route) => (cause: Cause.Cause<never>) => {
  const failure = Cause.failureOption(cause as Cause.Cause<unknown>)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (Predicate.isTagged(error, "RouteNotFound")) return Effect.succeed(notFound)
    if (error instanceof HttpApiDecodeError) {
      const paths = error.issues.map((issue) => issue.path.join(".")).join(", ")
      return Effect.succeed(
        errorResponse(400, { ErrorCode: ErrorBody.ErrorCodes.invalidParameter, Message: `Invalid parameter: ${paths}` })
      )
    }
    // The errors the API declares: HttpApi encodes them with their own status.
    return Effect.failCause(cause)
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
  return Effect.as(Effect.logError("Unexpected defect").pipe(Effect.annotateLogs({ route })), serverError)
}

const previousAttemptsOf = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d{1,9}$/.test(header.trim()) ? Number(header) : undefined

/** The journal entry of a request, from what it asked and how it was answered. No secrets are read. */
const entryOf = (
  request: HttpServerRequest.HttpServerRequest,
  target: Routes.Target,
  decision: Faults.Decision,
  status: number | undefined,
  transactionId: string | undefined
) =>
  Effect.map(DateTime.now, (time): Journal.Entry => {
    const requestId = request.headers[Wire.Headers.requestId.toLowerCase()]
    const previousAttempts = previousAttemptsOf(request.headers[Wire.Headers.previousAttempts.toLowerCase()])
    return {
      time,
      route: target.route,
      method: request.method,
      path: target.pathname,
      ...(status === undefined ? {} : { status }),
      ...(requestId === undefined ? {} : { requestId }),
      ...(previousAttempts === undefined ? {} : { previousAttempts }),
      ...(transactionId === undefined ? {} : { transactionId }),
      ...(decision.injected.length === 0 ? {} : { faults: decision.injected })
    }
  })

/** The middleware of a server with the given role. */
export const layer = (role: Routes.Role) =>
  HttpApiBuilder.middleware(
    Effect.gen(function*() {
      const config = yield* SandboxConfig
      const recorder = yield* Journal.Recorder
      const injector = yield* Faults.FaultInjector
      const classify = Routes.classifier(role, config.stage)
      return (app) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const startedAt = yield* Clock.currentTimeMillis
          const target = classify(request.method, request.url)
          const served = target.served
          const decision = served ? yield* injector.decide(target.route) : Faults.none
          const fault = Option.getOrUndefined(decision.answer)
          const traceId = Ids.makeRequestId()

          // Runs on the final answer, whoever produced it (the API's error encoding included).
          yield* HttpApp.appendPreResponseHandler((_, response) =>
            Effect.gen(function*() {
              if (fault?.kind === "dropAnswer") destroySocket(request)
              const status = fault?.kind === "reset" ? undefined : response.status
              yield* recorder.record(
                yield* entryOf(request, target, decision, status, Journal.annotatedTransaction(request))
              )
              yield* Metrics.record(target.route, status, decision.injected)
              const millis = (yield* Clock.currentTimeMillis) - startedAt
              if (config.requestLogLevel._tag !== "None") {
                yield* Effect.logWithLevel(config.requestLogLevel, "request").pipe(
                  Effect.annotateLogs({
                    method: request.method,
                    route: target.route,
                    status: fault?.kind === "reset"
                      ? "reset"
                      : fault?.kind === "dropAnswer"
                      ? "dropped"
                      : response.status,
                    millis
                  })
                )
              }
              if (fault?.kind === "reset" || fault?.kind === "dropAnswer") return unanswered
              const traced = HttpServerResponse.setHeader(response, Wire.Headers.traceId, traceId)
              return fault?.kind === "malformed" ? malformed(traced) : traced
            })
          )

          if (decision.delayMillis > 0) yield* Effect.interruptible(Effect.sleep(decision.delayMillis))
          if (!served) return notFound
          switch (fault?.kind) {
            case "reset":
              destroySocket(request)
              return unanswered
            case "status503":
            case "status500":
              return faultResponse(fault)
          }
          const routed = target.url === request.url ? request : request.modify({ url: target.url })
          return yield* app.pipe(
            Effect.provideService(HttpServerRequest.HttpServerRequest, routed),
            Effect.catchAllCause(answerCause(target.route))
          )
        })
    })
  )
