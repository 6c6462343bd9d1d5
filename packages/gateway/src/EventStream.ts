/**
 * The server-sent events of a quote (`GET /v1/quotes/{id}/events`).
 *
 * PLACEHOLDER (api engineer): the events engineer owns this module; theirs
 * replaces it on merge. Only `response`'s signature is the contract.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as EventLog from "@gcx/workflow/EventLog"
import * as Effect from "effect/Effect"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as QuoteView from "./QuoteView.js"

/** The JSON of an event without card data: terminal events carry the QuoteView-style outcome or error only. */
const dataOf = (event: QuoteEvent.QuoteEvent): unknown => {
  switch (event._tag) {
    case "Completed":
      return { transactionId: event.transactionId, outcome: QuoteView.outcomeOf(event.quote) }
    case "Failed":
      return { transactionId: event.transactionId, error: QuoteView.failureOf(event.error) }
    default: {
      const { card: _, ...encoded } = QuoteEvent.encode(event) as { readonly card?: unknown }
      return encoded
    }
  }
}

/** The SSE response of quote `requestId`'s events after `lastEventId` (all of them when none); ends after the terminal one. */
export const response = (
  requestId: string,
  lastEventId: Option.Option<number>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, EventLog.EventLog> =>
  Effect.map(EventLog.EventLog, (log) =>
    HttpServerResponse.stream(
      log.follow(requestId, Option.getOrElse(lastEventId, () => 0)).pipe(
        Stream.map((entry) =>
          `id: ${entry.seq}\nevent: ${entry.event._tag}\ndata: ${JSON.stringify(dataOf(entry.event))}\n\n`
        ),
        Stream.catch(() => Stream.empty),
        Stream.encodeText
      ),
      { contentType: "text/event-stream", headers: { "cache-control": "no-store" } }
    ))
