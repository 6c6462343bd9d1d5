/**
 * One card of `gcx batch`, from its row to its result line, so that a
 * resume never POSTs a card twice (`BatchResults` says what a re-run does
 * with each card):
 * - a card refused before any I/O (`Card.validate`) writes nothing before its
 *   result;
 * - before its POST, the card's requestId and `previousAttempts` are
 *   committed to the results file (`posting`, fsynced); again before each
 *   retry of the POST, with the attempt it is about to send;
 * - once the POST answers, its transaction is recorded (`submitted`);
 * - a card whose transaction is known is tracked (`QuotePoller.track`),
 *   never POSTed again; one with only a requestId is POSTed again with it and
 *   `previousAttempts + 1`, and the service answers with the transaction an
 *   earlier attempt created, if any.
 */
import * as Card from "@gcx/core/Card"
import * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as Redaction from "@gcx/core/Redaction"
import type * as QuotePoller from "@gcx/poller/QuotePoller"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type * as BatchFile from "./BatchFile.js"
import type * as BatchLog from "./BatchLog.js"
import * as BatchResults from "./BatchResults.js"

/** A card to quote: its row, and its fingerprint (`BatchKey.fingerprint`). */
export interface Pending {
  readonly row: BatchFile.Row
  readonly key: string
}

/** A finished card: its result line, and its error unless it completed. */
export interface Outcome {
  readonly result: BatchResults.Result
  readonly error: Option.Option<Errors.QuoteFailure>
}

/** The lines are built from typed values: no checks again. */
const trusted = { disableChecks: true } as const

/** The fields of a result that say which card it is. */
const cardFields = ({ key, row }: Pending) => ({
  key,
  line: row.line,
  card: Redaction.maskCardNumber(row.card.cardNumber),
  productLineId: row.card.productLineId
})

const completed = (pending: Pending, event: QuoteEvent.Completed, requestId: string | undefined): Outcome => ({
  result: new BatchResults.Result({
    ...cardFields(pending),
    status: "completed",
    transactionId: event.quote.transactionId,
    ...(requestId === undefined ? {} : { requestId }),
    actualCardValue: event.quote.actualCardValue,
    exchangeCardValue: event.quote.exchangeCardValue,
    finishedAt: event.timestamp
  }, trusted),
  error: Option.none()
})

/** What a failed card's line says of its request: the transaction, or the requestId and the attempts of its POST. */
interface Request {
  readonly transactionId?: string | undefined
  readonly requestId?: string | undefined
  readonly previousAttempts?: number | undefined
}

const failed = (pending: Pending, error: Errors.QuoteFailure, request: Request, finishedAt: DateTime.Utc): Outcome => ({
  result: new BatchResults.Result({
    ...cardFields(pending),
    status: "failed",
    ...(request.transactionId ? { transactionId: request.transactionId } : {}),
    ...(request.requestId === undefined ? {} : { requestId: request.requestId }),
    ...(request.previousAttempts === undefined || request.transactionId
      ? {}
      : { previousAttempts: request.previousAttempts }),
    group: Errors.groupOf(error),
    error: error._tag,
    ...("errorCode" in error && error.errorCode !== undefined ? { errorCode: error.errorCode } : {}),
    ...Option.match(Errors.customerMessage(error), { onNone: () => ({}), onSome: (userMessage) => ({ userMessage }) }),
    message: error.message,
    finishedAt
  }, trusted),
  error: Option.some(error)
})

/** The `previousAttempts` of the last POST a failed call sent: its `attempts` minus 1, when it says. */
const lastPreviousAttempts = (error: Errors.QuoteFailure, sent: number): number =>
  "attempts" in error && typeof error.attempts === "number" && error.attempts > 0 ? error.attempts - 1 : sent

/**
 * `Card.validateResult` without the stack trace of its error: a refused card's error is reported by
 * its message, never its stack, and capturing one costs more than the rest of a refused row.
 */
const validate = (card: Card.CardInput) => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return Card.validateResult(card)
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** What quoting a card needs: the poller, the results file (if any), and how to track. */
export interface Context {
  readonly poller: QuotePoller.Service
  readonly log: Option.Option<BatchLog.BatchLog>
  readonly track: QuotePoller.TrackOptions
}

/**
 * Quotes one card as its latest line in the results file says (`resume`),
 * recording its requestId before the POST and its transaction after; gives
 * its outcome (a failure of the card is an outcome, not an error).
 */
export const quote = (
  context: Context,
  pending: Pending,
  resume: BatchResults.Resume
): Effect.Effect<Outcome, PlatformError.PlatformError> => {
  const { log, poller, track } = context
  const record = (commit: boolean, progress: BatchResults.Progress) =>
    Option.match(log, {
      onNone: () => Effect.void,
      onSome: (log) => commit ? log.commit(progress) : log.append(progress)
    })
  const progress = (fields: Omit<ConstructorParameters<typeof BatchResults.Progress>[0], "key" | "line">) =>
    new BatchResults.Progress({ key: pending.key, line: pending.row.line, ...fields }, trusted)
  const now = DateTime.now

  /**
   * The outcome of a card from its events: its terminal event, or the error the stream failed with (no
   * transaction: `request` says what its line keeps of the POST). The transaction is recorded once the POST answers.
   */
  const outcomeOf = (
    events: Stream.Stream<QuoteEvent.QuoteEvent, Errors.QuoteFailure>,
    requestId: string | undefined,
    request: (error: Errors.QuoteFailure) => Request
  ) =>
    events.pipe(
      Stream.map(Result.succeed),
      Stream.catch((error) => Stream.succeed(Result.fail(error))),
      Stream.tap((item) =>
        Result.isSuccess(item) && item.success._tag === "Submitted" && requestId !== undefined
          ? record(false, progress({ status: "submitted", requestId, transactionId: item.success.transactionId }))
          : Effect.void
      ),
      Stream.filter((item) => Result.isFailure(item) || QuoteEvent.isTerminal(item.success)),
      Stream.runHead,
      Effect.flatMap((head): Effect.Effect<Outcome> => {
        if (Option.isNone(head)) return Effect.die(new Error("a quote's events ended without an outcome"))
        const item = head.value
        if (Result.isFailure(item)) {
          return Effect.map(now, (at) => failed(pending, item.failure, request(item.failure), at))
        }
        const event = item.success as QuoteEvent.Terminal
        return Effect.succeed(
          event._tag === "Completed"
            ? completed(pending, event, requestId)
            : failed(pending, event.error, { transactionId: event.transactionId, requestId }, event.timestamp)
        )
      })
    )

  return Effect.gen(function*() {
    const card = validate(pending.row.card)
    if (Result.isFailure(card)) return failed(pending, card.failure, {}, yield* now)
    if (resume._tag === "Track") {
      return yield* outcomeOf(poller.track(resume.transactionId, track), resume.requestId, () => resume)
    }
    const [requestId, previousAttempts] = resume._tag === "Repost"
      ? [resume.requestId, resume.previousAttempts + 1]
      : [Ids.makeRequestId(), 0]
    yield* record(true, progress({ status: "posting", requestId, previousAttempts }))
    const events = poller.quote(card.success, {
      ...track,
      requestId,
      previousAttempts,
      beforeRetry: (event) =>
        // a retry that cannot be recorded is not sent: the card fails, and the batch with the disk
        record(true, progress({ status: "posting", requestId, previousAttempts: event.attempt - 1 })).pipe(Effect.orDie)
    })
    return yield* outcomeOf(
      events,
      requestId,
      (error) => ({ requestId, previousAttempts: lastPreviousAttempts(error, previousAttempts) })
    )
  })
}
