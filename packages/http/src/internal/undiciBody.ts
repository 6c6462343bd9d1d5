/**
 * The body of one answer dispatched through undici, as it arrives: the
 * dispatch handler writes the chunks here, the response reads them. No Node
 * stream and no promise stand between the socket and the reader.
 *
 * The chunks are kept until read. Past a high-water mark the dispatch is
 * paused (undici stops reading the socket) until the reader takes them, so an
 * unread body holds at most that much beyond the socket's buffers. A whole
 * read (`text`, `json`, ...) lets the body flow to its end.
 *
 * A body is read either whole (any number of times) or once as a stream.
 * Readers are woken, and a paused dispatch resumed, in a microtask: never from
 * within undici's parser, which is one for all connections (resuming another
 * connection's parser from inside it fails an assertion).
 */

/** What undici's dispatch controller offers the body. */
export interface Flow {
  readonly pause: () => void
  readonly resume: () => void
  readonly abort: (reason: Error) => void
}

/** The state of one body, shared by the dispatch handler and the response. */
export interface State {
  readonly chunks: Array<Uint8Array>
  /** The bytes in `chunks`. */
  bytes: number
  done: boolean
  failure: Error | undefined
  /** How the body is being read: whole (any number of times), or once as a stream. */
  reading: "whole" | "stream" | undefined
  /** Whole reads are waiting: the body is not paused. */
  flowing: number
  paused: boolean
  flow: Flow | undefined
  readonly waiters: Array<() => void>
}

/** The bytes kept before the dispatch is paused, while nothing reads the body as a whole. */
export const highWaterMark = 64 * 1024

/** A new, empty body. */
export const make = (): State => ({
  chunks: [],
  bytes: 0,
  done: false,
  failure: undefined,
  reading: undefined,
  flowing: 0,
  paused: false,
  flow: undefined,
  waiters: []
})

const notify = (state: State): void => {
  if (state.waiters.length === 0) return
  const waiters = state.waiters.splice(0)
  queueMicrotask(() => {
    for (const waiter of waiters) waiter()
  })
}

/** A chunk arrived. */
export const received = (state: State, chunk: Uint8Array): void => {
  state.chunks.push(chunk)
  state.bytes += chunk.length
  if (state.flowing === 0 && !state.paused && state.bytes >= highWaterMark && state.flow !== undefined) {
    state.paused = true
    state.flow.pause()
  }
  notify(state)
}

/** The body is complete. */
export const ended = (state: State): void => {
  state.done = true
  notify(state)
}

/** The body was cut off. */
export const failed = (state: State, error: Error): void => {
  state.failure = error
  notify(state)
}

/** Lets a paused dispatch read the socket again. */
export const resume = (state: State): void => {
  if (!state.paused) return
  state.paused = false
  const flow = state.flow
  queueMicrotask(() => {
    // Paused again meanwhile (a stream took the chunks, then more came): the next take resumes it.
    if (!state.paused) flow?.resume()
  })
}

/** Waits for the next change of the body (a chunk, its end or its failure). */
export const waitFor = (state: State, waiter: () => void): () => void => {
  state.waiters.push(waiter)
  return () => {
    const index = state.waiters.indexOf(waiter)
    if (index >= 0) state.waiters.splice(index, 1)
  }
}

/** The whole body, once `done`: joined into one chunk, kept for the next read (not to be written to). */
export const joined = (state: State): Uint8Array => {
  if (state.chunks.length !== 1) {
    const out = Buffer.concat(state.chunks, state.bytes)
    state.chunks.length = 0
    state.chunks.push(out)
  }
  return state.chunks[0]!
}

/** Takes the chunks kept so far (for a stream), and lets a paused dispatch go on. */
export const take = (state: State): Array<Uint8Array> => {
  const taken = state.chunks.splice(0)
  state.bytes = 0
  resume(state)
  return taken
}
