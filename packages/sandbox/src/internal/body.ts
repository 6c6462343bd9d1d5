import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { ErrorBody } from "@gcx/core"
import * as RequestBody from "@gcx/core/RequestBody"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { BadRequest, maxBodyBytes, PayloadTooLarge } from "../Api.js"

const tooLarge = new PayloadTooLarge({
  ErrorCode: ErrorBody.ErrorCodes.bodyTooLarge,
  Message: `The request body is larger than ${maxBodyBytes} bytes`
})

const notUtf8 = new BadRequest({
  ErrorCode: ErrorBody.ErrorCodes.invalidBody,
  Message: "The request body is not UTF-8"
})

/** Reads the request body as UTF-8 text, at most `maxBodyBytes` of it (`RequestBody.readText`). */
export const readText = (
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<string, PayloadTooLarge | BadRequest> =>
  RequestBody.readText(
    NodeHttpServerRequest.toIncomingMessage(request),
    request.headers["content-length"],
    maxBodyBytes
  ).pipe(Effect.mapError((error) => error._tag === "TooLarge" ? tooLarge : notUtf8))

/** Parses a JSON body; malformed JSON answers 400 with an Error body that never echoes the body. */
export const parseJson = (text: string): Effect.Effect<unknown, BadRequest> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () =>
      new BadRequest({ ErrorCode: ErrorBody.ErrorCodes.invalidBody, Message: "The request body is not valid JSON" })
  })

/** Reads and parses a JSON body within the size limit. */
export const readJson = (
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<unknown, BadRequest | PayloadTooLarge> => Effect.flatMap(readText(request), parseJson)
