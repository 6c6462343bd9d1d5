/**
 * The lines of a file, streamed: what `gcx batch` reads its batch file and
 * its results file with. Memory holds one chunk and one line at a time,
 * whatever the size of the file; a line longer than `maxLineBytes` is refused
 * as soon as its first `maxLineBytes + 1` bytes are read, naming its number.
 *
 * Lines are split on `\n` in the bytes (a `\r` before it is dropped), then
 * decoded as UTF-8: a multi-byte character never contains the byte `\n`.
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as PlatformError from "effect/PlatformError"
import * as Stream from "effect/Stream"

/** The longest line accepted, in bytes, without its line break: 64 KiB. */
export const maxLineBytes = 64 * 1024

/**
 * The size of the reads: small, so that few lines are in flight at once (they would outlive the young
 * generation of the heap and fill the old one with garbage).
 */
const chunkBytes = 16 * 1024

/** One line of a file. */
export interface Line {
  /** Its number, from 1. */
  readonly number: number
  /** Its text, without the line break. */
  readonly text: string
  /** The byte offset just after it (and its line break). */
  readonly end: number
  /** Whether a line break ends it: only the last line of a file may lack one (a torn write, or no final newline). */
  readonly terminated: boolean
}

/** A splitter of byte chunks into lines, with the state carried from one chunk to the next. */
interface Splitter {
  /** The lines the chunk ends, or the number of a line that grew past the limit. */
  readonly push: (chunk: Uint8Array) => Array<Line> | number
  /** The last line when the file does not end with a line break. */
  readonly end: () => Array<Line>
}

const concat = (parts: ReadonlyArray<Uint8Array>, last: Uint8Array): Uint8Array => {
  if (parts.length === 0) return last
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, last.length))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  out.set(last, at)
  return out
}

const makeSplitter = (maxBytes: number): Splitter => {
  const decoder = new TextDecoder()
  let parts: Array<Uint8Array> = []
  let pending = 0
  let number = 0
  let offset = 0
  const line = (bytes: Uint8Array, terminated: boolean): Line => {
    number += 1
    offset += bytes.length + (terminated ? 1 : 0)
    const length = terminated && bytes[bytes.length - 1] === 13 ? bytes.length - 1 : bytes.length
    return { number, text: decoder.decode(bytes.subarray(0, length)), end: offset, terminated }
  }
  return {
    push: (chunk) => {
      const out: Array<Line> = []
      let start = 0
      while (start < chunk.length) {
        const newline = chunk.indexOf(10, start)
        const piece = chunk.subarray(start, newline < 0 ? chunk.length : newline)
        if (pending + piece.length > maxBytes) return number + 1
        if (newline < 0) {
          // a copy: the reader may reuse its buffer for the next chunk
          parts.push(piece.slice())
          pending += piece.length
          break
        }
        out.push(line(concat(parts, piece), true))
        parts = []
        pending = 0
        start = newline + 1
      }
      return out
    },
    end: () => pending === 0 ? [] : [line(concat(parts, new Uint8Array(0)), false)]
  }
}

/**
 * The lines of the file at `path`, streamed; a line past `maxBytes` (default
 * `maxLineBytes`) fails the stream with `tooLong(itsNumber)` before the rest
 * of it is read.
 */
export const stream = <E>(
  fs: FileSystem.FileSystem,
  path: string,
  tooLong: (line: number) => E,
  maxBytes: number = maxLineBytes
): Stream.Stream<Line, E | PlatformError.PlatformError> =>
  fs.stream(path, { chunkSize: chunkBytes }).pipe(
    Stream.mapAccumArrayEffect(() => makeSplitter(maxBytes), (splitter, chunks) => {
      const out: Array<Line> = []
      for (const chunk of chunks) {
        const lines = splitter.push(chunk)
        if (typeof lines === "number") return Effect.fail(tooLong(lines))
        for (const line of lines) out.push(line)
      }
      return Effect.succeed([splitter, out] as const)
    }, { onHalt: (splitter) => splitter.end() })
  )

/** The lines of a file the CLI wrote itself (a results file), without a length limit. */
export const unlimited = (
  fs: FileSystem.FileSystem,
  path: string
): Stream.Stream<Line, PlatformError.PlatformError> =>
  stream(fs, path, (): never => {
    throw new Error("no line is too long without a limit")
  }, Number.POSITIVE_INFINITY)
