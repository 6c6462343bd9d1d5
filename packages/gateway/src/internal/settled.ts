/**
 * A POST that waits (`Prefer: wait=N`, `internal/prefer.ts`): the quote's
 * view once its terminal event is recorded, if that happens within the wait.
 * It watches the quote as an event stream does (`EventLog.cursor`: the events
 * this process records are handed over, without a read), woken by the
 * gateway's shutdown (`internal/keepAlives.ts`): a gateway that drains answers
 * its waiting POSTs at once, with the quote still pending. A log that cannot
 * be read while waiting ends the wait (logged): the quote is accepted all the
 * same, and its caller follows it as after a POST that does not wait.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as EventLog from "@gcx/workflow/EventLog"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { viewOf } from "../GatewayQuotes.js"
import type * as QuoteView from "../QuoteView.js"
import * as Drain from "./drain.js"
import * as KeepAlives from "./keepAlives.js"

/** What a POST that asked to wait got: the quote's view when it ended in time, and whether it waited at all. */
export interface Waited {
  readonly view: Option.Option<QuoteView.QuoteView>
  /** `false` when the key held as many streams and waits as it may (`KeepAlives.MaxHeld`): no wait was granted. */
  readonly waited: boolean
}

const terminal = (entries: ReadonlyArray<EventLog.Entry>) => entries.some((entry) => QuoteEvent.isTerminal(entry.event))

/**
 * The events of quote `requestId` up to its terminal one; `undefined` when the gateway drains first
 * (or the events end without it); `"full"` when the quote has not ended and `holder` may hold no more.
 */
const untilEnd = (log: EventLog.Service, requestId: string, holder: string) =>
  Effect.scoped(Effect.gen(function*() {
    const cursor = yield* log.cursor(requestId, 0)
    // an ended quote (a repeated POST) is answered without a place, whatever the key holds
    let entries: ReadonlyArray<EventLog.Entry> = (yield* cursor.poll) ?? []
    if (terminal(entries)) return entries
    if (!(yield* KeepAlives.register(log, cursor.wake, holder))) return "full" as const
    const drain = yield* Drain.Draining
    while (!drain.draining()) {
      const next = yield* cursor.next
      // the end without a terminal event (not the cursor's contract): nothing to answer as ended
      if (next === undefined) return undefined
      entries = entries.concat(next)
      if (terminal(next)) return entries
    }
    return undefined
  }))

/**
 * Quote `requestId`'s view once it has ended, when it ends within `seconds`,
 * waited for by the API key `holder`; none when it has not, when the gateway
 * drains, or when its log cannot be read (logged by the reason only); and no
 * wait at all when `holder` holds as many streams and waits as it may.
 */
export const wait = (
  requestId: string,
  seconds: number,
  holder: string
): Effect.Effect<Waited, never, EventLog.EventLog> =>
  Effect.flatMap(EventLog.EventLog, (log) =>
    untilEnd(log, requestId, holder).pipe(
      Effect.timeoutOption(Duration.seconds(seconds)),
      Effect.map((ended): Waited => {
        const entries = Option.getOrUndefined(ended)
        if (entries === "full") return { view: Option.none(), waited: false }
        return { view: entries === undefined ? Option.none() : Option.some(viewOf(requestId, entries)), waited: true }
      }),
      Effect.catchTag("SqlError", (error) =>
        Effect.logWarning("a waiting POST could not read its quote's events: answered 202").pipe(
          Effect.annotateLogs({ requestId, reason: error.reason._tag }),
          Effect.as<Waited>({ view: Option.none(), waited: true })
        )),
      Effect.withSpan("gcx.gateway.wait", { attributes: { "gcx.gateway.wait_seconds": seconds } }, {
        captureStackTrace: false
      })
    ))
