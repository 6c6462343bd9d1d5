/**
 * The POST body of the gateway: read within `maxBodyBytes` (413 past it,
 * before reading when Content-Length says so; a chunked body over the limit
 * is drained, so that the 413 reaches the client instead of a reset), parsed
 * as JSON (400), and its card validated before any I/O (400 naming the field,
 * never echoing it).
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Card from "@gcx/core/Card"
import * as RequestBody from "@gcx/core/RequestBody"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import { maxBodyBytes } from "../GatewayApi.js"
import * as GatewayErrors from "../GatewayErrors.js"

const tooLarge = GatewayErrors.payloadTooLarge(maxBodyBytes)

const notUtf8 = GatewayErrors.invalidRequest("the request body is not UTF-8")

/** The body as UTF-8 text, at most `maxBodyBytes` of it (`RequestBody.readText`): 413, or 400 when not UTF-8. */
export const readText = (
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<string, GatewayErrors.PayloadTooLarge | GatewayErrors.InvalidRequest> =>
  RequestBody.readText(
    NodeHttpServerRequest.toIncomingMessage(request),
    request.headers["content-length"],
    maxBodyBytes
  ).pipe(Effect.mapError((error) => error._tag === "TooLarge" ? tooLarge : notUtf8))

/** The fields of a POST's body. */
const cardFields: ReadonlySet<string> = new Set(["cardNumber", "pinNumber", "productLineId"])

/** The card of a body's text; the reason names the field, never its value. */
export const cardOf = (text: string): Result.Result<Card.Card, GatewayErrors.InvalidRequest> => {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return Result.fail(GatewayErrors.invalidRequest("the request body is not valid JSON"))
  }
  if (!Predicate.isObject(body) || Array.isArray(body)) {
    return Result.fail(GatewayErrors.invalidRequest("the request body must be a JSON object"))
  }
  // as the OpenAPI document says (`additionalProperties: false`); the field is not named: it could be anything
  if (Object.keys(body).some((field) => !cardFields.has(field))) {
    return Result.fail(
      GatewayErrors.invalidRequest("the request body has a field other than cardNumber, pinNumber and productLineId")
    )
  }
  return Result.mapError(
    Card.validateResult(body),
    (error) => GatewayErrors.invalidRequest(`${error.field.replace(/^card\./, "")} ${error.reason}`)
  )
}

/**
 * What is wrong with a POST's media type, if anything: the body must be
 * `application/json` (a `charset` other than UTF-8 is refused), and not
 * encoded (`Content-Encoding`, but `identity`), or it would be read as
 * something it is not.
 */
export const mediaTypeProblem = (headers: HttpServerRequest.HttpServerRequest["headers"]): string | undefined => {
  const encoding = headers["content-encoding"]?.trim().toLowerCase()
  if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
    return "the body must not be encoded (Content-Encoding): send it as plain JSON"
  }
  const [type, ...parameters] = (headers["content-type"] ?? "").split(";").map((part) => part.trim().toLowerCase())
  if (type !== "application/json") return "the body must be JSON: send Content-Type: application/json"
  const charset = parameters.find((parameter) => parameter.startsWith("charset="))?.slice(8).replace(/"/g, "")
  return charset === undefined || charset === "utf-8" || charset === "utf8"
    ? undefined
    : "the body must be UTF-8 JSON: send Content-Type: application/json"
}

/** Reads the card of a POST: 415, 413, 400, or the validated card. */
export const readCard = (
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<
  Card.Card,
  GatewayErrors.PayloadTooLarge | GatewayErrors.InvalidRequest | GatewayErrors.UnsupportedMediaType
> => {
  const problem = mediaTypeProblem(request.headers)
  if (problem !== undefined) return Effect.fail(GatewayErrors.unsupportedMediaType(problem))
  return Effect.flatMap(readText(request), (text) => Effect.fromResult(cardOf(text)))
}
