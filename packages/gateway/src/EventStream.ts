/**
 * The server-sent events of a quote (`GET /v1/quotes/{id}/events`): its
 * events from the event log (`EventLog.read`, then its `cursor`), each as
 * `id: <seq>\nevent: <tag>\ndata: <JSON>\n\n` (`effect/encoding/Sse`'s
 * encoder), the JSON without card data, a `: keep-alive` comment every 15 s,
 * and the end of the response after the terminal event. A client that lost
 * the stream sends the last id it received (`Last-Event-ID`) and gets what
 * follows it: no gap, no repeat. A quote that has ended, or that ends with
 * the first events the stream waits for, is answered whole, at once, with its
 * length. When the gateway shuts down, its open streams
 * send what is recorded and end: their clients resume the same way, on a
 * gateway that is running.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as EventLog from "@gcx/workflow/EventLog"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as GatewayErrors from "./GatewayErrors.js"
import * as Drain from "./internal/drain.js"
import * as KeepAlives from "./internal/keepAlives.js"
import * as QuoteView from "./QuoteView.js"

/** How often an open stream that has nothing to say sends a comment, so that proxies keep it open. */
export const keepAliveInterval: Duration.Duration = KeepAlives.interval

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

const encoder = new TextEncoder()
const keepAliveBytes: Arr.NonEmptyReadonlyArray<Uint8Array> = [encoder.encode(keepAlive)]

/** The messages of `entries` as one body. */
const messages = (entries: ReadonlyArray<EventLog.Entry>): string => entries.map(message).join("")

/** The headers and media type of every answer. */
const options = { contentType, headers } as const

/** The answer of a quote that has nothing more to say: it ended before `Last-Event-ID`, or the gateway closes. */
const empty = HttpServerResponse.text("", options)

/**
 * The answer to a `HEAD` of the stream: its headers, and no body. No cursor is opened: a `HEAD`
 * never waits for the quote's events.
 */
export const head: HttpServerResponse.HttpServerResponse = empty

/**
 * `cursor` woken by the keep-alive ticker and, when the gateway shuts down,
 * by `internal/keepAlives.ts`'s `wakeAll` (or at once, when it already
 * does), held by the API key `holder`, until the scope closes; and the drain.
 * `undefined` when `holder` holds as many streams and waits as it may
 * (`KeepAlives.MaxHeld`): nothing is held.
 */
const awake = (log: EventLog.Service, cursor: EventLog.Cursor, holder: string) =>
  Effect.gen(function*() {
    if (!(yield* KeepAlives.register(log, cursor.wake, holder))) return undefined
    const drain = yield* Drain.Draining
    if (drain.draining()) cursor.wake()
    return drain
  })

/**
 * A cursor over quote `requestId`'s events after `afterSeq`, `awake` (held by `holder`), until the
 * scope closes; and the drain. `undefined` when `holder` may hold no more.
 */
const watched = (log: EventLog.Service, requestId: string, afterSeq: number, holder: string) =>
  Effect.flatMap(
    log.cursor(requestId, afterSeq),
    (cursor) => Effect.map(awake(log, cursor, holder), (drain) => drain === undefined ? undefined : { cursor, drain })
  )

/** Logs that a stream ended before its quote did (the client resumes), by its cause and the quote's id. */
const endedEarly = (requestId: string) => (cause: unknown) =>
  Effect.as(
    Effect.logWarning("a quote's event stream ended early", cause).pipe(Effect.annotateLogs({ requestId })),
    undefined
  )

/**
 * The followed part of a response: `head` first, then the events after
 * `afterSeq` as they are recorded, until the terminal one. The body is one
 * pull on the log's cursor (`EventLog.cursor`), which the shared keep-alive
 * ticker wakes: no fiber of its own, and no stream combinator, per open
 * stream. A database failure ends it early, with a log; so does the gateway's
 * shutdown (`internal/drain.ts`): one more read, then the end. The client
 * resumes with `Last-Event-ID`.
 */
const follow = (log: EventLog.Service, requestId: string, afterSeq: number, head: Uint8Array, holder: string) =>
  Stream.unwrap(Effect.gen(function*() {
    const watch = yield* watched(log, requestId, afterSeq, holder)
    // the key's last place was taken meanwhile (by a newcomer, or while this stream handed its own over from
    // `opened`): `head`, then the end; the client resumes after it, and is told 429 while the key is full
    if (watch === undefined) {
      yield* Effect.logWarning("an event stream ended early: its API key holds as many streams and waits as it may")
        .pipe(Effect.annotateLogs({ requestId, keyId: holder }))
      return Stream.succeed(head)
    }
    const { cursor, drain } = watch
    let first: Arr.NonEmptyReadonlyArray<Uint8Array> | undefined = [head]
    let drained = false
    const next = Effect.suspend(() => drained ? Effect.undefined : cursor.next).pipe(
      Effect.catchCause(endedEarly(requestId)),
      Effect.flatMap((entries) => {
        drained = drain.draining()
        if (entries === undefined || (drained && entries.length === 0)) return Cause.done()
        const chunk: Arr.NonEmptyReadonlyArray<Uint8Array> = Arr.isReadonlyArrayNonEmpty(entries)
          ? [encoder.encode(messages(entries))]
          : keepAliveBytes
        return Effect.succeed(chunk)
      })
    )
    return Stream.fromPull(Effect.succeed(Effect.suspend(() => {
      if (first === undefined) return next
      const out = first
      first = undefined
      return Effect.succeed(out)
    })))
  }))

/**
 * The answer that starts with `entries`, the quote's events after the client's
 * last: whole, with its length, when they hold the terminal event; else they
 * are its first chunk and the response follows the quote after them.
 */
const answer = (
  log: EventLog.Service,
  requestId: string,
  entries: Arr.NonEmptyReadonlyArray<EventLog.Entry>,
  holder: string
): HttpServerResponse.HttpServerResponse => {
  const end = entries.findIndex((entry) => QuoteEvent.isTerminal(entry.event))
  if (end >= 0) return HttpServerResponse.text(messages(entries.slice(0, end + 1)), options)
  const head = encoder.encode(messages(entries))
  return HttpServerResponse.stream(follow(log, requestId, Arr.lastNonEmpty(entries).seq, head, holder), options)
}

/**
 * The answer of a stream that opens: the quote's events after `afterSeq`,
 * from a cursor watching the quote first (`EventLog.Cursor.poll`). Those
 * recorded are answered at once (`answer`); a database that cannot be read
 * then is `Unavailable` (503). When there is none yet (a stream opened just
 * after its POST), it waits for the first ones, then answers with them: a
 * quote that ends in one batch, the common case, is one answer with its
 * length, never a stream, and usually one read (the events this process
 * records are handed over). Nothing is written meanwhile, as a stream would write
 * nothing either: the headers go with the first bytes. Woken by the
 * keep-alive ticker, the response starts with the comment and follows. The
 * answer is empty when the gateway shuts down, when the quote had ended
 * before `afterSeq`, and when the log cannot be read any more once waiting
 * (logged): the client resumes, as from a stream that ended early (a 503
 * would stop a browser's `EventSource` for good).
 */
const opened = (log: EventLog.Service, requestId: string, afterSeq: number, holder: string) =>
  Effect.scoped(Effect.gen(function*() {
    const cursor = yield* log.cursor(requestId, afterSeq)
    const recorded = yield* Effect.catchTag(cursor.poll, "SqlError", GatewayErrors.unavailableOn)
    if (recorded === undefined) return empty
    if (Arr.isReadonlyArrayNonEmpty(recorded)) {
      // a stream that will follow, of a key whose places are taken: refused now, while it can be (its
      // place is taken, atomically, when it follows: one that loses a race then ends after these events)
      const follows = !recorded.some((entry) => QuoteEvent.isTerminal(entry.event))
      if (follows && (yield* KeepAlives.full(log, holder))) {
        return yield* Effect.fail(GatewayErrors.tooManyHeld)
      }
      return answer(log, requestId, recorded, holder)
    }
    // nothing yet: kept awake while it waits (a quote that had ended needs no ticker, nor a place)
    const drain = yield* awake(log, cursor, holder)
    if (drain === undefined) return yield* Effect.fail(GatewayErrors.tooManyHeld)
    const entries = yield* cursor.next.pipe(Effect.catchTag("SqlError", endedEarly(requestId)))
    if (entries === undefined) return empty
    if (Arr.isReadonlyArrayNonEmpty(entries)) return answer(log, requestId, entries, holder)
    return drain.draining()
      ? empty
      : HttpServerResponse.stream(follow(log, requestId, afterSeq, keepAliveBytes[0], holder), options)
  }))

/**
 * The SSE response of quote `requestId`'s events after `lastEventId` (all of
 * them when none), for the API key `holder`: those recorded, then each as it
 * is recorded; it ends after the terminal event. A stream that would wait,
 * of a key that holds as many open streams and waiting POSTs as it may on
 * this gateway (`KeepAlives.MaxHeld`), is refused, 429
 * (`GatewayErrors.tooManyHeld`); one that starts with the events recorded and
 * finds the key's places taken when it follows them ends after them (its
 * client resumes). A quote that has ended is answered whole, whatever the key holds. When the events recorded hold the terminal event (a
 * stream opened, or resumed, after its quote ended), they are the whole
 * response, written at once with its length. When there are some, they are
 * the response's first chunk and it follows the quote after them. When there
 * is none yet, the response waits for the first ones, or for the keep-alive
 * (15 s): see `opened`. A database that cannot be read when the stream opens
 * is `Unavailable` (503), logged by its reason only.
 */
export const response = (
  requestId: string,
  lastEventId: Option.Option<number>,
  holder: string
): Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayErrors.Unavailable | GatewayErrors.TooManyRequests,
  EventLog.EventLog
> => Effect.flatMap(EventLog.EventLog, (log) => opened(log, requestId, Option.getOrElse(lastEventId, () => 0), holder))
