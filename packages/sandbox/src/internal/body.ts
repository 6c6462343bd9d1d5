import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { ErrorBody } from "@gcx/core"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { BadRequest, maxBodyBytes, PayloadTooLarge } from "../Api.js"

const tooLarge = new PayloadTooLarge({
  ErrorCode: ErrorBody.ErrorCodes.bodyTooLarge,
  Message: `The request body is larger than ${maxBodyBytes} bytes`
})

/**
 * Reads the request body as UTF-8 text, at most `maxBodyBytes` of it. A
 * declared Content-Length over the limit is refused before reading; a chunked
 * body over the limit is drained and refused, so that the 413 reaches the
 * client instead of a reset (the platform's own limit destroys the socket).
 */
export const readText = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string, PayloadTooLarge> => {
  const declared = Number(request.headers["content-length"] ?? 0)
  if (declared > maxBodyBytes) return Effect.fail(tooLarge)
  const source = NodeHttpServerRequest.toIncomingMessage(request)
  return Effect.callback<string, PayloadTooLarge>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBodyBytes) chunks.push(chunk)
    }
    const onEnd = () =>
      resume(size > maxBodyBytes ? Effect.fail(tooLarge) : Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    const onError = () => resume(Effect.interrupt)
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    return Effect.sync(() => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    })
  })
}

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
