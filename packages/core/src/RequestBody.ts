/**
 * A request body read within a size limit, for the HTTP servers of gcx (the
 * sandbox and the gateway). The platform's own limit destroys the socket, so
 * that the client sees a reset instead of its 413: here a body declared
 * longer than the limit is refused before it is read, and one that turns out
 * longer is drained (and dropped) for `maxDrainBytes` more, so that a client
 * that sends before it reads still gets the answer; past that (a body that
 * never ends), it is refused at once, and the server answers and closes.
 */
import * as Effect from "effect/Effect"
import type { Readable } from "node:stream"

/** Why a body was not read: it is longer than the limit. */
export interface TooLarge {
  readonly _tag: "TooLarge"
}

const tooLarge: TooLarge = { _tag: "TooLarge" }

/** Why a body was not read: it is not UTF-8 (never read with replacement characters in place of its bytes). */
export interface NotUtf8 {
  readonly _tag: "NotUtf8"
}

const notUtf8: NotUtf8 = { _tag: "NotUtf8" }

/** How much of a body past its limit is drained before it is refused without waiting for its end: 1 MiB. */
export const maxDrainBytes = 1024 * 1024

/**
 * The body of `source` (a Node `IncomingMessage`) as UTF-8 text, at most
 * `maxBytes` of it: `TooLarge` when `contentLength` (the request's header)
 * declares more, before anything is read, or when more arrives: at the body's
 * end, or once `maxDrainBytes` more have come. A stream that fails (the client
 * left) interrupts the reading. A body that is not UTF-8 is `NotUtf8`.
 */
export const readText = (
  source: Readable,
  contentLength: string | undefined,
  maxBytes: number
): Effect.Effect<string, TooLarge | NotUtf8> => {
  if (Number(contentLength ?? 0) > maxBytes) return Effect.fail(tooLarge)
  return Effect.callback<string, TooLarge | NotUtf8>((resume) => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    const detach = () => {
      source.off("data", onData).off("end", onEnd).off("error", onError)
    }
    const finish = (effect: Effect.Effect<string, TooLarge | NotUtf8>) => {
      detach()
      resume(effect)
    }
    const onData = (chunk: Uint8Array) => {
      size += chunk.length
      if (size <= maxBytes) chunks.push(chunk)
      else if (size > maxBytes + maxDrainBytes) {
        // no more is read: the server answers, and closes the connection
        source.pause()
        finish(Effect.fail(tooLarge))
      }
    }
    const onEnd = () => finish(size > maxBytes ? Effect.fail(tooLarge) : decode(chunks, size))
    const onError = () => finish(Effect.interrupt)
    source.on("data", onData).once("end", onEnd).once("error", onError)
    return Effect.sync(detach)
  })
}

const decoder = new TextDecoder("utf-8", { fatal: true })

/** `chunks`, `size` bytes in all, as UTF-8 text; `NotUtf8` when they are not. */
const decode = (chunks: ReadonlyArray<Uint8Array>, size: number): Effect.Effect<string, NotUtf8> => {
  let bytes: Uint8Array
  if (chunks.length === 1) bytes = chunks[0]!
  else {
    bytes = new Uint8Array(size)
    let offset = 0
    for (const chunk of chunks) {
      bytes.set(chunk, offset)
      offset += chunk.length
    }
  }
  try {
    return Effect.succeed(decoder.decode(bytes))
  } catch {
    return Effect.fail(notUtf8)
  }
}
