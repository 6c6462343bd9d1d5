/**
 * Reads an answer's body as text, never more than a cap of bytes: a hostile
 * or broken server cannot make the client hold a body of any size in memory.
 * - A `content-length` over the cap fails at once, and the body is left
 *   unread: nothing of it is buffered beyond the socket's.
 * - A `content-length` within the cap (and no `content-encoding`, which
 *   `fetch` would decompress past the declared length) is read whole: HTTP
 *   framing stops it at that length.
 * - Anything else (chunked, compressed) is streamed and counted; the reading
 *   stops at the first chunk past the cap, which cancels the body (the
 *   connection is closed).
 */
import * as Effect from "effect/Effect"
import type * as Headers from "effect/http/Headers"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Stream from "effect/Stream"

/** The body, or `TooLarge` when it is larger than the cap (what was read is dropped). */
export type Body = { readonly _tag: "Text"; readonly text: string } | { readonly _tag: "TooLarge" }

const tooLarge: Body = { _tag: "TooLarge" }

/** The body declared length, when it bounds what will be read. */
const declaredLength = (headers: Headers.Headers): number | undefined => {
  const encoding = headers["content-encoding"]
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") return undefined
  const length = headers["content-length"]
  return length !== undefined && /^\d{1,15}$/.test(length.trim()) ? Number(length) : undefined
}

const decoder = new TextDecoder()

const concat = (chunks: ReadonlyArray<Uint8Array>, bytes: number): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  const out = new Uint8Array(bytes)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

/**
 * Reads at most `maxBytes` of the body, then stops (see the module notes).
 * `headers` are the response's, read once by the caller: some clients build
 * them anew on every `response.headers`.
 */
export const read = (
  response: HttpClientResponse.HttpClientResponse,
  headers: Headers.Headers,
  maxBytes: number
): Effect.Effect<Body, HttpClientError.HttpClientError> => {
  const declared = declaredLength(headers)
  if (declared !== undefined) {
    // Over the cap: left unread, so nothing of it is buffered beyond the socket's.
    return declared <= maxBytes
      ? Effect.map(response.text, (text): Body => ({ _tag: "Text", text }))
      : Effect.succeed(tooLarge)
  }
  return Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let bytes = 0
    let over = false
    return Stream.runForEachWhile(response.stream, (chunk) =>
      Effect.sync(() => {
        if (over) return false
        bytes += chunk.length
        if (bytes > maxBytes) {
          over = true
          chunks.length = 0
          return false
        }
        chunks.push(chunk)
        return true
      })).pipe(
        Effect.map((): Body => over ? tooLarge : { _tag: "Text", text: decoder.decode(concat(chunks, bytes)) })
      )
  })
}
