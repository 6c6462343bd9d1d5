/**
 * The answers the sandbox's middleware gives by itself: Error bodies (unknown
 * routes, defects, injected faults), the 421 of a foreign `Host`, and what a
 * fault does to an answer or its connection.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { ErrorBody, Routes as Wire } from "@gcx/core"
import * as HttpBody from "effect/http/HttpBody"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Schema from "effect/Schema"
import type * as Faults from "../Faults.js"

const encodeErrorBody = Schema.encodeSync(ErrorBody.ErrorBody)

/** An answer with an Error body (spec 2.4). */
export const errorResponse = (
  status: number,
  body: { readonly ErrorCode: string; readonly Message: string },
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(encodeErrorBody(new ErrorBody.ErrorBody(body)), { status, headers })

export const notFound = errorResponse(404, {
  ErrorCode: ErrorBody.ErrorCodes.routeNotFound,
  Message: "No route matches this method and path"
})

/** The answer to a request whose `Host` is not one of the sandbox's names: a DNS-rebinding page, or a name to allow. */
export const misdirected = HttpServerResponse.text(
  "421 Misdirected Request: this sandbox does not serve this Host name. " +
    "Use localhost or 127.0.0.1, or start it with --allowed-host <name>.\n",
  { status: 421 }
)

export const serverError = errorResponse(500, {
  ErrorCode: ErrorBody.ErrorCodes.serverError,
  Message: "Internal server error"
})

export const faultResponse = (rule: Faults.FaultRule): HttpServerResponse.HttpServerResponse =>
  rule.kind === "status503"
    ? errorResponse(
      503,
      { ErrorCode: ErrorBody.ErrorCodes.serviceUnavailable, Message: "The service is unavailable" },
      rule.retryAfterSeconds === undefined ? {} : { [Wire.Headers.retryAfter]: String(rule.retryAfterSeconds) }
    )
    : serverError

/** Destroys the connection under a request, so that the client gets no answer at all. */
export const destroySocket = (request: HttpServerRequest.HttpServerRequest): void => {
  NodeHttpServerRequest.toIncomingMessage(request).socket.destroy()
}

/** The answer that a destroyed socket swallows; empty, so that writing it never waits on the socket. */
export const unanswered = HttpServerResponse.empty()

/** Keeps status and headers but cuts the JSON body in half, as a broken proxy would. */
export const malformed = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const { body } = response
  const bytes = body._tag === "Uint8Array"
    ? body.body
    : new TextEncoder().encode(body._tag === "Raw" && typeof body.body === "string" ? body.body : "{}")
  return HttpServerResponse.setBody(
    response,
    HttpBody.uint8Array(bytes.slice(0, Math.max(1, Math.floor(bytes.length / 2))), "application/json")
  )
}
