/**
 * The POST of a quote: the request sent, its transaction journaled, and its
 * `Submitted` event (and terminal event, for a quote the POST answered
 * completed) published.
 */
import type { Errors } from "@gcx/core"
import { Card, Ids, Quote, QuoteEvent, Redaction } from "@gcx/core"
import type { ExchangeClient } from "@gcx/http"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as QuoteEvents from "../QuoteEvents.js"
import * as QuoteJournal from "../QuoteJournal.js"
import type { RequestIds } from "./requestIds.js"
import * as Tracking from "./tracking.js"
import type { Target } from "./watch.js"

/** What a quote is submitted from: a validated request, or card input that is validated before any I/O. */
export type QuoteInput = Quote.QuoteRequest | Card.CardInput

/** What the POST needs. */
export interface Dependencies {
  readonly client: ExchangeClient.Service
  readonly bus: QuoteEvents.QuoteEvents["Service"]
  readonly journal: QuoteJournal.QuoteJournal["Service"]
  /** The requestIds callers gave, with their cards' fingerprints (a requestId belongs to one card). */
  readonly requestIds: RequestIds
}

/** A submitted quote: its `Submitted` event, its terminal event when the POST answered it completed, and its transaction. */
export interface Submission {
  readonly submitted: QuoteEvent.Submitted
  readonly finished: QuoteEvent.Completed | QuoteEvent.Failed | undefined
  readonly target: Target
}

const maskedCard = (request: QuoteInput): string =>
  request instanceof Quote.QuoteRequest
    ? request.card.masked
    : Redaction.maskCardNumber(
      typeof request.cardNumber === "string" || Redacted.isRedacted(request.cardNumber) ? request.cardNumber : ""
    )

const disableChecks = { disableChecks: true } as const

/**
 * POSTs a quote and journals its transaction before anything can interrupt
 * between the two: once the service has answered, the transaction is
 * recorded (or the failure to record it logged) whatever happens to the
 * stream. A journal that cannot write does not end the quote: it goes on in
 * this process, without durability, and the failure is logged as an error.
 * `Submitted` is published on the bus; a quote the POST answered completed
 * comes with its terminal event (published too), and needs no GET.
 * `options` gives the requestId (a fresh one by default) and the attempts of
 * it made before; `onRetry` sees the POST's `Retrying` events as they
 * happen, each before its retry is sent.
 *
 * A requestId the caller gives is claimed for the card first (`RequestIds`):
 * given before with another card, the quote fails with `RequestIdConflict`
 * before any I/O; with the same card, the POST counts `previousAttempts` on
 * (from the attempts given, or those this poller made, whichever is more),
 * and the service answers the original transaction.
 */
export const submit = (
  { bus, client, journal, requestIds }: Dependencies,
  request: QuoteInput,
  options: { readonly requestId?: string | undefined; readonly previousAttempts?: number | undefined },
  onRetry: (event: QuoteEvent.Retrying) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<Submission, ExchangeClient.ClientError | Errors.InvalidCardInput | Errors.RequestIdConflict> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      // Chosen here, so that the POST's Retrying events can name it before the service answers.
      const requestId = options.requestId ?? Ids.makeRequestId()
      let sent: QuoteInput = request
      let previousAttempts = options.previousAttempts
      if (options.requestId !== undefined) {
        const card = request instanceof Quote.QuoteRequest ? request.card : yield* Card.validate(request)
        previousAttempts = yield* Effect.fromResult(requestIds.claim(requestId, card, options.previousAttempts ?? 0))
        sent = request instanceof Quote.QuoteRequest ? request : new Quote.QuoteRequest({ card }, disableChecks)
      }
      const created = yield* restore(client.createQuote(sent, {
        requestId,
        previousAttempts,
        onRetry: (info) =>
          Effect.flatMap(DateTime.now, (timestamp) => {
            if (previousAttempts !== undefined) requestIds.retried(requestId)
            const event = QuoteEvent.retrying(
              { transactionId: "", timestamp, attempt: info.attempt, delay: info.delay, requestId },
              info.error
            )
            return Effect.andThen(bus.publish(event), onRetry(event))
          })
      }))
      const timestamp = yield* DateTime.now
      const card = maskedCard(request)
      const productLineId = request instanceof Quote.QuoteRequest
        ? request.card.productLineId
        : request.productLineId
      const location = Option.match(created.location, { onNone: () => ({}), onSome: (location) => ({ location }) })
      if (!created.quote.isCompleted) {
        yield* journal.record(
          new QuoteJournal.JournalEntry({
            transactionId: created.transactionId,
            requestId: created.requestId,
            submittedAt: timestamp,
            card,
            productLineId,
            ...location
          })
        ).pipe(
          Effect.catch((error) =>
            Effect.logError(`journal: could not record a transaction in flight (${error.operation})`)
          ),
          Effect.annotateLogs({ transactionId: created.transactionId })
        )
      }
      // Typed values: no re-validation (see internal/tracking.ts).
      const submitted = new QuoteEvent.Submitted({
        transactionId: created.transactionId,
        timestamp,
        requestId: created.requestId,
        card,
        productLineId,
        ...location,
        ...Option.match(created.traceId, { onNone: () => ({}), onSome: (traceId) => ({ traceId }) }),
        ...(created.quote.percentComplete !== undefined ? { percentComplete: created.quote.percentComplete } : {}),
        ...(created.quote.expectedCompletionTime !== undefined
          ? { expectedCompletionTime: created.quote.expectedCompletionTime }
          : {})
      }, disableChecks)
      yield* bus.publish(submitted)
      const finished = created.quote.isCompleted
        ? Tracking.terminalFor(created.transactionId, created.quote, timestamp)
        : undefined
      if (finished !== undefined) yield* bus.publish(finished)
      const target: Target = {
        transactionId: created.transactionId,
        expectedCompletionTime: created.quote.expectedCompletionTime
      }
      return { submitted, finished, target }
    })
  )
