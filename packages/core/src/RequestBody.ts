/**
 * A request body read within a size limit, for the HTTP servers of gcx (the
 * sandbox and the gateway). The platform's own limit destroys the socket, so
 * that the client sees a reset instead of its 413: here a body declared
 * longer than the limit is refused before it is read, and one that turns out
 * longer is drained (and dropped), so that the server can still answer.
 */
import * as Effect from "effect/Effect"
import type { Readable } from "node:stream"

/** Why a body was not read: it is longer than the limit. */
export interface TooLarge {
  readonly _tag: "TooLarge"
}

const tooLarge: TooLarge = { _tag: "TooLarge" }

/**
 * The body of `source` (a Node `IncomingMessage`) as UTF-8 text, at most
 * `maxBytes` of it: `TooLarge` when `contentLength` (the request's header)
 * declares more, before anything is read, or when more arrives. A stream that
 * fails (the client left) interrupts the reading.
 */
export const readText = (
  source: Readable,
  contentLength: string | undefined,
  maxBytes: number
): Effect.Effect<string, TooLarge> => {
  if (Number(contentLength ?? 0) > maxBytes) return Effect.fail(tooLarge)
  return Effect.callback<string, TooLarge>((resume) => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    const onData = (chunk: Uint8Array) => {
      size += chunk.length
      if (size <= maxBytes) chunks.push(chunk)
    }
    const onEnd = () => resume(size > maxBytes ? Effect.fail(tooLarge) : Effect.succeed(decode(chunks, size)))
    const onError = () => resume(Effect.interrupt)
    source.on("data", onData).once("end", onEnd).once("error", onError)
    return Effect.sync(() => {
      source.off("data", onData).off("end", onEnd).off("error", onError)
    })
  })
}

const decoder = new TextDecoder()

/** `chunks`, `size` bytes in all, as UTF-8 text. */
const decode = (chunks: ReadonlyArray<Uint8Array>, size: number): string => {
  if (chunks.length === 1) return decoder.decode(chunks[0])
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.length
  }
  return decoder.decode(bytes)
}
