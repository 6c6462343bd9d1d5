/**
 * A caller of `gcx serve` as a partner backend in any language would write
 * it, on plain `fetch` (no gcx code): `POST /v1/quotes` with an
 * `Idempotency-Key` (with `Prefer: wait` or not), `GET /v1/quotes/{id}`,
 * and the quote's server-sent events read until the terminal one. Used by row 9's load child and by the
 * gateway's chaos run.
 */

/** Where a gateway listens and the API key its caller presents. */
export interface Target {
  readonly baseUrl: string
  readonly key: string
}

/** The body of `POST /v1/quotes`. */
export interface CardInput {
  readonly cardNumber: string
  readonly pinNumber: string
  readonly productLineId: string
}

/** One server-sent event: its id (the quote's event seq), its name (the `QuoteEvent` tag) and its data. */
export interface SseMessage {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

/** The names of a quote's terminal events. */
export const terminalEvents: ReadonlySet<string> = new Set(["Completed", "Failed"])

const headers = (target: Target, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${target.key}`,
  ...extra
})

/**
 * `POST /v1/quotes` once, waiting up to `waitSeconds` for the outcome when given (`Prefer: wait`): the
 * response as it came.
 */
export const post = (
  target: Target,
  idempotencyKey: string,
  card: CardInput,
  signal?: AbortSignal,
  waitSeconds?: number
) =>
  fetch(`${target.baseUrl}/v1/quotes`, {
    method: "POST",
    headers: headers(target, {
      "content-type": "application/json",
      "idempotency-key": idempotencyKey,
      ...(waitSeconds === undefined ? {} : { prefer: `wait=${waitSeconds}` })
    }),
    body: JSON.stringify(card),
    ...(signal === undefined ? {} : { signal })
  })

/** `GET /healthz` once (no key): the response as it came. */
export const healthz = (target: Target) => fetch(`${target.baseUrl}/healthz`)

/** `GET /v1/quotes/{id}` once: the response as it came. */
export const get = (target: Target, id: string, signal?: AbortSignal) =>
  fetch(`${target.baseUrl}/v1/quotes/${id}`, { headers: headers(target), ...(signal === undefined ? {} : { signal }) })

/** `GET /v1/quotes/{id}/events`, resuming after `lastEventId` when given. */
export const events = (target: Target, id: string, lastEventId?: string, signal?: AbortSignal) =>
  fetch(`${target.baseUrl}/v1/quotes/${id}/events`, {
    headers: headers(target, {
      accept: "text/event-stream",
      ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
    }),
    ...(signal === undefined ? {} : { signal })
  })

/** Parses one SSE block (the lines between blank lines); `undefined` for a comment-only block. */
export const parseBlock = (block: string): SseMessage | undefined => {
  let id: string | undefined
  let event = "message"
  const data: Array<string> = []
  let fields = 0
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const name = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
    fields++
    if (name === "id") id = value
    else if (name === "event") event = value
    else if (name === "data") data.push(value)
  }
  return fields === 0 ? undefined : { id, event, data: data.join("\n") }
}

/**
 * The messages of an SSE response as they arrive, until the stream ends or
 * `onMessage` returns `false` (then the body is cancelled).
 */
export const readEvents = async (
  response: Response,
  onMessage: (message: SseMessage) => boolean | void
): Promise<void> => {
  if (response.body === null) return
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += value.replaceAll("\r\n", "\n")
      let end = buffer.indexOf("\n\n")
      while (end >= 0) {
        const message = parseBlock(buffer.slice(0, end))
        buffer = buffer.slice(end + 2)
        if (message !== undefined && onMessage(message) === false) return
        end = buffer.indexOf("\n\n")
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}

/** The outcome of a waiting POST answered 202 (its quote had not ended), then followed by its stream to completion. */
export const completedAfter202 = "Completed after 202"

/** The terminal event's name of a quote resource's status. */
const terminalOf: Record<string, string> = { completed: "Completed", failed: "Failed" }

/**
 * Submits a quote and follows its event stream to its terminal event: that event's name, or the failure's
 * status. With `waitSeconds`, the POST waits for the outcome (`Prefer: wait`): a 200 is the outcome, and a
 * 202 (the quote still running) is followed by its stream.
 */
export const quote = async (
  target: Target,
  idempotencyKey: string,
  card: CardInput,
  waitSeconds?: number
): Promise<string> => {
  const accepted = await post(target, idempotencyKey, card, undefined, waitSeconds)
  if (accepted.status === 200 && waitSeconds !== undefined) {
    const { status } = (await accepted.json()) as { readonly status: string }
    return terminalOf[status] ?? `POST 200 ${status}`
  }
  if (accepted.status !== 202) {
    await accepted.body?.cancel()
    return `POST ${accepted.status}`
  }
  const { id } = (await accepted.json()) as { readonly id: string }
  const terminal = await follow(target, id)
  return waitSeconds !== undefined && terminal === "Completed" ? completedAfter202 : terminal
}

/** Follows quote `id`'s event stream to its terminal event: that event's name, or the failure's status. */
const follow = async (target: Target, id: string): Promise<string> => {
  const stream = await events(target, id)
  if (stream.status !== 200) {
    await stream.body?.cancel()
    return `events ${stream.status}`
  }
  let terminal = "stream ended"
  await readEvents(stream, (message) => {
    if (!terminalEvents.has(message.event)) return true
    terminal = message.event
    return false
  })
  return terminal
}

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** What a retried call ended with: its JSON body, the status it ended on, and the attempts it took. */
export interface Retried<A> {
  readonly status: number
  readonly body: A | undefined
  readonly attempts: number
  /** How each attempt ended, by status (`0`: no answer). */
  readonly statuses: Readonly<Record<string, number>>
}

/**
 * Bounds of a retried call: attempts, the time each may take, the first delay
 * (doubled each time, to 2 s) and a deadline (epoch ms).
 */
export interface RetryOptions {
  readonly maxAttempts: number
  readonly attemptTimeoutMillis: number
  readonly baseDelayMillis: number
  readonly deadline: number
}

/**
 * Calls `send` until it answers other than a connection error, a timeout, a
 * 5xx or a 429 (waiting `Retry-After` or backoff between attempts), within
 * `options`. Status 0: no answer at all (`statuses` tells `timeout` apart).
 */
export const retrying = async <A>(
  send: (signal: AbortSignal) => Promise<Response>,
  options: RetryOptions
): Promise<Retried<A>> => {
  let attempts = 0
  let last = 0
  const statuses: Record<string, number> = {}
  while (attempts < options.maxAttempts && Date.now() < options.deadline) {
    attempts++
    let wait = Math.min(2_000, options.baseDelayMillis * 2 ** (attempts - 1))
    try {
      const signal = AbortSignal.timeout(options.attemptTimeoutMillis)
      const response = await send(signal)
      last = response.status
      statuses[last] = (statuses[last] ?? 0) + 1
      if (response.status < 500 && response.status !== 429) {
        const text = await response.text()
        return { status: response.status, body: text === "" ? undefined : JSON.parse(text) as A, attempts, statuses }
      }
      await response.body?.cancel()
      const retryAfter = Number(response.headers.get("retry-after"))
      if (retryAfter > 0) wait = retryAfter * 1000
    } catch (error) {
      last = 0
      const kind = (error as Error).name === "TimeoutError" ? "timeout" : "0"
      statuses[kind] = (statuses[kind] ?? 0) + 1
    }
    await pause(wait * (0.5 + Math.random() / 2))
  }
  return { status: last, body: undefined, attempts, statuses }
}
