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

/** The events of quote `requestId` up to its terminal one; `undefined` when the gateway drains first. */
const untilEnd = (log: EventLog.Service, requestId: string, holder: string) =>
  Effect.scoped(Effect.gen(function*() {
    const cursor = yield* log.cursor(requestId, 0)
    yield* KeepAlives.register(log, cursor.wake, holder)
    const drain = yield* Drain.Draining
    let entries: ReadonlyArray<EventLog.Entry> = []
    while (!drain.draining()) {
      const next = yield* cursor.next
      // the end without a terminal event (not the cursor's contract): nothing to answer as ended
      if (next === undefined) return undefined
      entries = entries.concat(next)
      if (next.some((entry) => QuoteEvent.isTerminal(entry.event))) return entries
    }
    return undefined
  }))

/**
 * Quote `requestId`'s view once it has ended, when it ends within `seconds`,
 * waited for by the API key `holder`; none when it has not, when the gateway
 * drains, or when its log cannot be read (logged by the reason only).
 */
export const view = (
  requestId: string,
  seconds: number,
  holder: string
): Effect.Effect<Option.Option<QuoteView.QuoteView>, never, EventLog.EventLog> =>
  Effect.flatMap(EventLog.EventLog, (log) =>
    untilEnd(log, requestId, holder).pipe(
      Effect.timeoutOption(Duration.seconds(seconds)),
      Effect.map(Option.flatMap(Option.fromNullishOr)),
      Effect.map(Option.map((entries) => viewOf(requestId, entries))),
      Effect.catchTag("SqlError", (error) =>
        Effect.logWarning("a waiting POST could not read its quote's events: answered 202").pipe(
          Effect.annotateLogs({ requestId, reason: error.reason._tag }),
          Effect.as(Option.none())
        )),
      Effect.withSpan("gcx.gateway.wait", { attributes: { "gcx.gateway.wait_seconds": seconds } }, {
        captureStackTrace: false
      })
    ))

/**
 * The wait granted to a POST of the API key `holder` that asked for `seconds`: none (0) when the
 * key holds as many open streams and waiting POSTs as it may on this gateway (`KeepAlives.MaxHeld`).
 */
export const granted = (seconds: number, holder: string): Effect.Effect<number, never, EventLog.EventLog> =>
  seconds === 0
    ? Effect.succeed(0)
    : Effect.flatMap(EventLog.EventLog, (log) => Effect.map(KeepAlives.full(log, holder), (full) => full ? 0 : seconds))
