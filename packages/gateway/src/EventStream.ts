/**
 * The server-sent events of a quote (`GET /v1/quotes/{id}/events`): its
 * events from the event log (`EventLog.read`, then its `cursor`), each as
 * `id: <seq>\nevent: <tag>\ndata: <JSON>\n\n` (`effect/encoding/Sse`'s
 * encoder), the JSON without card data, a `: keep-alive` comment every 15 s,
 * and the end of the response after the terminal event. A client that lost
 * the stream sends the last id it received (`Last-Event-ID`) and gets what
 * follows it: no gap, no repeat. A quote that has ended is answered whole, at
 * once, with its length. When the gateway shuts down, its open streams
 * send what is recorded and end: their clients resume the same way, on a
 * gateway that is running.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as EventLog from "@gcx/workflow/EventLog"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import * as Fiber from "effect/Fiber"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as GatewayErrors from "./GatewayErrors.js"
import * as Drain from "./internal/drain.js"
import * as QuoteView from "./QuoteView.js"

/** How often an open stream that has nothing to say sends a comment, so that proxies keep it open. */
export const keepAliveInterval = Duration.seconds(15)

/** The comment sent every `keepAliveInterval`. */
export const keepAlive = ": keep-alive\n\n"

/** The media type of the event stream. */
const contentType = "text/event-stream"

/** The headers of the event stream. */
export const headers = {
  "cache-control": "no-cache",
  /** nginx and the proxies that honour it pass the events at once instead of buffering them. */
  "x-accel-buffering": "no"
} as const

/**
 * The data of an event as the stream sends it, without card data: the event
 * encoded (`QuoteEvent.encode`), `Submitted` without its masked card and the
 * service's Location (the upstream address is not the callers' business); the
 * terminal events with the quote resource's outcome (`QuoteView.outcomeOf`)
 * or error (`QuoteView.failureOf`) in place of the quote or the error.
 */
export const dataOf = (event: QuoteEvent.QuoteEvent): Record<string, unknown> => {
  const base = { _tag: event._tag, transactionId: event.transactionId, timestamp: event.timestamp.toJSON() }
  switch (event._tag) {
    case "Completed":
      return { ...base, outcome: QuoteView.outcomeOf(event.quote) }
    case "Failed":
      return { ...base, error: QuoteView.failureOf(event.error) }
    default: {
      // the upstream service's address is the gateway's business, not its callers'
      const { card: _, location: __, ...encoded } = QuoteEvent.encode(event) as Record<string, unknown>
      return encoded
    }
  }
}

/** One entry of the log as an SSE message. */
export const message = (entry: EventLog.Entry): string =>
  Sse.encoder.write({
    _tag: "Event",
    id: String(entry.seq),
    event: entry.event._tag,
    data: JSON.stringify(dataOf(entry.event))
  })

/** A `Last-Event-ID` that is not the sequence number of an event (a whole number of at most 15 digits). */
export class InvalidLastEventId extends Schema.TaggedError<InvalidLastEventId>()("InvalidLastEventId", {}) {
  override get message(): string {
    return "Last-Event-ID must be the id of an event received (a whole number)"
  }
}

/** The `Last-Event-ID` header: none when absent or empty, else the seq it names, or `InvalidLastEventId`. */
export const parseLastEventId = (
  header: string | undefined
): Result.Result<Option.Option<number>, InvalidLastEventId> => {
  const value = header?.trim() ?? ""
  if (value === "") return Result.succeed(Option.none())
  return /^\d{1,15}$/.test(value) ? Result.succeed(Option.some(Number(value))) : Result.fail(new InvalidLastEventId())
}

/** The open streams of one event log, woken together by one keep-alive ticker while any is open. */
interface KeepAlives {
  readonly open: Set<() => void>
  ticker: Fiber.Fiber<unknown> | undefined
}

const keepAlives = new WeakMap<EventLog.Service, KeepAlives>()

/**
 * Registers `wake` with the one keep-alive ticker of `log`'s streams (started
 * by the first, in its fiber's context: its `Clock`), until the scope closes;
 * the ticker stops with the last stream. One timer for all the open streams,
 * not one fiber each.
 */
const keepAliveOf = (log: EventLog.Service, wake: () => void): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      let alives = keepAlives.get(log)
      if (alives === undefined) {
        alives = { open: new Set(), ticker: undefined }
        keepAlives.set(log, alives)
      }
      alives.open.add(wake)
      if (alives.ticker !== undefined) return Effect.succeed(alives)
      const { open } = alives
      const tick = Effect.sync(() => {
        for (const wake of open) wake()
      })
      return Effect.map(
        Effect.forkDetach(Effect.forever(Effect.andThen(Effect.sleep(keepAliveInterval), tick))),
        (ticker) => {
          alives.ticker = ticker
          return alives
        }
      )
    }),
    (alives) =>
      Effect.suspend(() => {
        alives.open.delete(wake)
        const ticker = alives.ticker
        if (alives.open.size > 0 || ticker === undefined) return Effect.void
        alives.ticker = undefined
        return Fiber.interrupt(ticker)
      })
  )

/**
 * Wakes every open stream of `log`: when the gateway drains, each sends what
 * is recorded and ends (see `follow`).
 */
export const wakeAll = (log: EventLog.Service): void => {
  const alives = keepAlives.get(log)
  if (alives === undefined) return
  for (const wake of alives.open) wake()
}

const encoder = new TextEncoder()
const keepAliveBytes: Arr.NonEmptyReadonlyArray<Uint8Array> = [encoder.encode(keepAlive)]

/** The messages of `entries` as one body. */
const messages = (entries: ReadonlyArray<EventLog.Entry>): string => entries.map(message).join("")

/**
 * The followed part of a response: the events after `afterSeq` as they are
 * recorded, until the terminal one. The body is one pull on the log's cursor
 * (`EventLog.cursor`), which the shared keep-alive ticker wakes: no fiber of
 * its own, and no stream combinator, per open stream. A database failure ends
 * it early, with a log; so does the gateway's shutdown (`internal/drain.ts`):
 * the client resumes with `Last-Event-ID`.
 */
const follow = (log: EventLog.Service, requestId: string, afterSeq: number) =>
  Stream.unwrap(Effect.gen(function*() {
    const cursor = yield* log.cursor(requestId, afterSeq)
    yield* keepAliveOf(log, cursor.wake)
    // the gateway shuts down (`wakeAll` wakes the open streams): one more read, then the end
    const drain = yield* Drain.Draining
    if (drain.draining()) cursor.wake()
    let drained = false
    return Stream.fromPull(Effect.succeed(
      Effect.suspend(() => drained ? Effect.undefined : cursor.next).pipe(
        Effect.catchCause((cause) =>
          Effect.as(
            Effect.logWarning("a quote's event stream ended early", cause).pipe(Effect.annotateLogs({ requestId })),
            undefined
          )
        ),
        Effect.flatMap((entries) => {
          drained = drain.draining()
          if (entries === undefined || (drained && entries.length === 0)) return Cause.done()
          return Effect.succeed(
            Arr.isReadonlyArrayNonEmpty(entries) ? [encoder.encode(messages(entries))] : keepAliveBytes
          )
        })
      )
    ))
  }))

/**
 * The SSE response of quote `requestId`'s events after `lastEventId` (all of
 * them when none): those recorded, then each as it is recorded; it ends after
 * the terminal event. The events recorded are read first: when they hold the
 * terminal event (a stream opened, or resumed before its end, after its
 * quote ended), they are the whole response, written at once with its
 * length, without a cursor, a watch or a stream; otherwise the response
 * follows the quote (see `follow`, whose cursor reads them again: one
 * indexed read more). A stream resumed after the terminal event is followed
 * too: the cursor finds the quote ended and the response is empty. A database
 * failure at that first read is `Unavailable` (503, before any event),
 * logged by its reason only.
 */
export const response = (
  requestId: string,
  lastEventId: Option.Option<number>
): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayErrors.Unavailable, EventLog.EventLog> =>
  Effect.flatMap(EventLog.EventLog, (log) => {
    const afterSeq = Option.getOrElse(lastEventId, () => 0)
    return log.read(requestId, afterSeq).pipe(
      Effect.map((entries) => {
        const end = entries.findIndex((entry) => QuoteEvent.isTerminal(entry.event))
        return end >= 0
          ? HttpServerResponse.text(messages(entries.slice(0, end + 1)), { contentType, headers })
          : HttpServerResponse.stream(follow(log, requestId, afterSeq), { contentType, headers })
      }),
      Effect.catchTag("SqlError", GatewayErrors.unavailableOn)
    )
  })
