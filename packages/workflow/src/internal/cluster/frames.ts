/**
 * Bounded frames on the cluster's sockets. The cluster's RPC serialization (`SchemaBinary`) frames each
 * message as a uvarint length then that many bytes. This guard sits in front of it: it reads the
 * lengths as the bytes pass (never copies them), refuses a frame longer than `maxFrameBytes` before the
 * parser buffers any of it, and closes a connection whose frame stays incomplete for `stallTimeout`.
 * Its cost is one step per frame header byte and one per chunk: linear in the bytes received.
 */
import type * as Arr from "effect/Array"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Socket from "effect/socket/Socket"

/** Why the guard closed a connection. */
export type Refusal = "frame_too_large" | "malformed_frame" | "stalled_frame"

/** The state of the frames of one connection. */
export interface FrameGuard {
  /** Reads `chunk`'s frame headers; a refusal if a frame is too long or its length malformed. */
  readonly feed: (chunk: Uint8Array) => Refusal | undefined
  /** Whether a frame has started and not ended. */
  readonly partial: () => boolean
}

/** A guard of frames of at most `maxFrameBytes` bytes. */
export const make = (maxFrameBytes: number): FrameGuard => {
  // bytes of the current frame's body still to come; or, while 0, the length being read
  let remaining = 0
  let length = 0
  let headerBytes = 0
  let scale = 1
  return {
    partial: () => remaining > 0 || headerBytes > 0,
    feed: (chunk) => {
      let pos = 0
      while (pos < chunk.length) {
        if (remaining > 0) {
          const skipped = Math.min(remaining, chunk.length - pos)
          remaining -= skipped
          pos += skipped
          continue
        }
        const byte = chunk[pos++]!
        length += (byte & 0x7F) * scale
        scale *= 128
        headerBytes++
        if (length > maxFrameBytes) return "frame_too_large"
        if ((byte & 0x80) !== 0) {
          if (headerBytes >= 8) return "malformed_frame"
          continue
        }
        if (length === 0) return "malformed_frame"
        remaining = length
        length = headerBytes = 0
        scale = 1
      }
      return undefined
    }
  }
}

/** What `guard` does besides bounding: how long a partial frame may stall, and who hears of a refusal. */
export interface GuardOptions {
  readonly maxFrameBytes: number
  readonly stallTimeout: Duration.Input
  readonly onRefused: (reason: Refusal) => Effect.Effect<void>
}

const encoder = new TextEncoder()

const readError = (reason: Refusal) =>
  new Socket.SocketError({ reason: new Socket.SocketReadError({ cause: new Error(`cluster connection: ${reason}`) }) })

/**
 * `socket` with bounded frames: a pull fails (and the reader of the cluster closes the connection) on a
 * frame longer than `maxFrameBytes`, a malformed length, or a partial frame with no byte for
 * `stallTimeout`. The bytes pass through unchanged.
 */
export const guard = (socket: Socket.Socket, options: GuardOptions): Socket.Socket =>
  Socket.make({
    writer: socket.writer,
    reader: Effect.map(socket.reader, (reader) => {
      const frames = make(options.maxFrameBytes)
      const refuse = (reason: Refusal) => Effect.andThen(options.onRefused(reason), Effect.fail(readError(reason)))
      const check = (
        chunks: Arr.NonEmptyReadonlyArray<Uint8Array | string>
      ): Effect.Effect<Arr.NonEmptyReadonlyArray<Uint8Array | string>, Socket.SocketError> => {
        for (const chunk of chunks) {
          const refusal = frames.feed(typeof chunk === "string" ? encoder.encode(chunk) : chunk)
          if (refusal !== undefined) return refuse(refusal)
        }
        return Effect.succeed(chunks)
      }
      const stalled = refuse("stalled_frame")
      const pull = Effect.suspend(() =>
        frames.partial()
          ? Effect.timeoutOrElse(reader.pull, { duration: options.stallTimeout, orElse: () => stalled })
          : reader.pull
      ).pipe(Effect.flatMap(check))
      return { pull, upgrade: reader.upgrade }
    })
  })
