/**
 * The quote poller: submits quotes and polls their transactions on a
 * `Schedule`, as a typed `Stream` of `QuoteEvent`s. Every event is also
 * published on `QuoteEvents`, and every transaction in flight is kept in the
 * `QuoteJournal` until its outcome is known.
 */
import type { Card } from "@gcx/core"
import { Errors, Quote, QuoteEvent, Redaction } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import type { RetryPolicy } from "@gcx/http"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Take from "effect/Take"
import * as Tracking from "./internal/tracking.js"
import * as PollSchedule from "./PollSchedule.js"
import * as QuoteEvents from "./QuoteEvents.js"
import * as QuoteJournal from "./QuoteJournal.js"

/** How to poll one transaction. */
export interface TrackOptions {
  /** The schedule, or the settings of the default one (`PollSchedule.make`). */
  readonly schedule?: PollSchedule.PollSchedule | PollSchedule.Options | undefined
  /** How long to poll before giving up with `PollTimeout`. Default 2 minutes. */
  readonly deadline?: Duration.DurationInput | undefined
  /** The service's `expectedCompletionTime` when it is already known (from the POST). */
  readonly expectedCompletionTime?: number | undefined
}

/** How to submit and poll one quote. */
export interface QuoteOptions extends TrackOptions {
  /** The idempotency key of the POST; 32 random hex characters unless given. */
  readonly requestId?: string | undefined
}

/** What a quote is submitted from: a validated request, or card input that is validated before any I/O. */
export type QuoteInput = Quote.QuoteRequest | Card.CardInput

/** One event of a batch, keyed by the index of its request. */
export type BatchEvent =
  | { readonly _tag: "Event"; readonly index: number; readonly event: QuoteEvent.QuoteEvent }
  /** The request was refused before a transaction existed (bad input, a POST that failed). */
  | { readonly _tag: "Rejected"; readonly index: number; readonly error: Errors.QuoteFailure }

/** The poller service. */
export interface Service {
  /** Polls a transaction until it completes or fails: `Progress`, `StepCompleted`, `Retrying`, then one terminal event. */
  readonly track: (transactionId: string, options?: TrackOptions) => Stream.Stream<QuoteEvent.QuoteEvent>
  /**
   * Submits a quote, then tracks it, as one stream that begins with
   * `Submitted`. It fails only when no transaction was created (bad input, a
   * refused or failed POST); every later failure is a `Failed` event.
   */
  readonly quote: (
    request: QuoteInput,
    options?: QuoteOptions
  ) => Stream.Stream<QuoteEvent.QuoteEvent, Errors.QuoteFailure>
  /** The completed quote, for callers who want no events; fails with the typed error. */
  readonly getQuote: (
    request: QuoteInput,
    options?: QuoteOptions
  ) => Effect.Effect<Quote.CompletedQuote, Errors.QuoteFailure>
  /** Quotes a batch, `concurrency` at a time; one card's failure is data in the stream, not the end of the batch. */
  readonly quoteAll: (
    requests: Iterable<QuoteInput>,
    options: TrackOptions & { readonly concurrency: number }
  ) => Stream.Stream<BatchEvent>
  /** Tracks every transaction in the journal again, for a process that restarts. */
  readonly resumeAll: (
    options?: TrackOptions & { readonly concurrency?: number | undefined }
  ) => Stream.Stream<QuoteEvent.QuoteEvent>
}

/** The poller service. */
export class QuotePoller extends Context.Tag("@gcx/poller/QuotePoller")<QuotePoller, Service>() {}

/** Defaults for every call; each call's options override them. */
export interface Options {
  readonly schedule?: PollSchedule.PollSchedule | PollSchedule.Options | undefined
  readonly deadline?: Duration.DurationInput | undefined
}

/** How many journalled transactions `resumeAll` tracks at once by default. */
export const defaultResumeConcurrency = 16

/** The default polling deadline. */
export const defaultDeadline: Duration.Duration = Duration.minutes(2)

const resolveSchedule = (schedule: TrackOptions["schedule"]): PollSchedule.PollSchedule =>
  Schedule.isSchedule(schedule) ? schedule : PollSchedule.make(schedule ?? {})

/**
 * Whether the journal keeps a transaction after this terminal event: only
 * while its outcome is unknown and can still be learnt by resuming, that is
 * after `PollTimeout` and after failures of this client's own configuration.
 */
const keepsJournalEntry = (event: QuoteEvent.Terminal): boolean =>
  event._tag === "Failed" &&
  ["PollTimeout", "TokenError", "InvalidApiKey", "PartnerNotFound", "MissingRequestId"].includes(event.error._tag)

/** A transient token failure: no answer, 429 or 5xx from the token endpoint. */
const isTransientTokenError = (error: Errors.QuoteFailure): boolean =>
  error._tag === "TokenError" && (error.httpStatus === undefined || error.httpStatus === 429 || error.httpStatus >= 500)

/** How many undecodable answers in a row end a quote, as a service that keeps answering garbage will not recover. */
const maxUnexpectedInARow = 3

const maskedCard = (request: QuoteInput): string =>
  request instanceof Quote.QuoteRequest
    ? request.card.masked
    : Redaction.maskCardNumber(
      typeof request.cardNumber === "string" || Redacted.isRedacted(request.cardNumber) ? request.cardNumber : ""
    )

const reasonOf = (error: Errors.QuoteFailure): string => {
  const status = "httpStatus" in error && error.httpStatus !== undefined ? ` (HTTP ${error.httpStatus})` : ""
  return `${error._tag}${status}`
}

/** Builds the poller over the client, the bus and the journal in context. */
export const make = (
  defaults: Options = {}
): Effect.Effect<Service, never, ExchangeClient.ExchangeClient | QuoteEvents.QuoteEvents | QuoteJournal.QuoteJournal> =>
  Effect.gen(function*() {
    const client = yield* ExchangeClient.ExchangeClient
    const bus = yield* QuoteEvents.QuoteEvents
    const journal = yield* QuoteJournal.QuoteJournal

    const forget = (transactionId: string) =>
      journal.remove(transactionId).pipe(
        Effect.catchAll((error) => Effect.logWarning(`journal: could not remove a transaction: ${error.message}`)),
        Effect.annotateLogs({ transactionId })
      )

    /** A `Retrying` event: `attempt` is the attempt about to be made, after `delay`. */
    const retrying = (transactionId: string, attempt: number, delay: Duration.Duration, error: Errors.QuoteFailure) =>
      Effect.map(
        DateTime.now,
        (timestamp) => new QuoteEvent.Retrying({ transactionId, timestamp, attempt, delay, reason: reasonOf(error) })
      )

    /** The polling loop of one transaction; `emit` publishes and hands on each event. */
    const poll = (
      transactionId: string,
      options: TrackOptions,
      emit: (event: QuoteEvent.QuoteEvent) => Effect.Effect<void>
    ) =>
      Effect.gen(function*() {
        const planner = yield* PollSchedule.planner(resolveSchedule(options.schedule ?? defaults.schedule))
        const deadlineMillis = Duration.toMillis(options.deadline ?? defaults.deadline ?? defaultDeadline)
        const deadline = (yield* Clock.currentTimeMillis) + deadlineMillis
        let tracking = Tracking.initial(transactionId)
        let polls = 0
        let failuresInARow = 0
        let unexpectedInARow = 0
        let observation: PollSchedule.Observation = {
          transactionId,
          polls,
          percentComplete: Option.none(),
          expectedCompletionTime: Option.fromNullable(options.expectedCompletionTime)
        }
        const finish = (event: QuoteEvent.Terminal) =>
          emit(event).pipe(
            Effect.zipRight(keepsJournalEntry(event) ? Effect.void : forget(transactionId)),
            Effect.as(event)
          )
        const timeout = Effect.gen(function*() {
          return yield* finish(
            new QuoteEvent.Failed({
              transactionId,
              timestamp: yield* DateTime.now,
              error: new Errors.PollTimeout({
                transactionId,
                deadlineMillis,
                polls,
                ...Option.match(tracking.percentComplete, {
                  onNone: () => ({}),
                  onSome: (lastPercentComplete) => ({ lastPercentComplete })
                })
              })
            })
          )
        })
        const onRetry = (info: RetryPolicy.RetryInfo) =>
          Effect.flatMap(retrying(transactionId, info.attempt, info.delay, info.error), emit)
        let delay = yield* planner.next(yield* Clock.currentTimeMillis, observation)
        while (true) {
          const now = yield* Clock.currentTimeMillis
          if (Option.isNone(delay) || now >= deadline) return yield* timeout
          yield* Effect.sleep(Math.min(Duration.toMillis(delay.value), deadline - now))
          polls += 1
          // The deadline bounds the GET too, its retries included.
          const remaining = deadline - (yield* Clock.currentTimeMillis)
          const answer = yield* client.getTransaction(transactionId, { onRetry }).pipe(
            Effect.either,
            Effect.timeoutOption(Math.max(0, remaining))
          )
          if (Option.isNone(answer)) return yield* timeout
          const result = answer.value
          const timestamp = yield* DateTime.now
          if (Either.isRight(result)) {
            failuresInARow = 0
            unexpectedInARow = 0
            const observed = Tracking.observe(tracking, result.right.status, timestamp)
            tracking = observed.tracking
            const terminal = observed.done ? observed.events.at(-1) as QuoteEvent.Terminal : undefined
            const progress = terminal === undefined ? observed.events : observed.events.slice(0, -1)
            yield* Effect.forEach(progress, emit, { discard: true })
            if (terminal !== undefined) return yield* finish(terminal)
            observation = {
              transactionId,
              polls,
              percentComplete: tracking.percentComplete,
              expectedCompletionTime: Option.fromNullable(result.right.status.response.expectedCompletionTime)
            }
            delay = yield* planner.next(yield* Clock.currentTimeMillis, observation)
            continue
          }
          const error = result.left
          unexpectedInARow = error._tag === "UnexpectedResponse" ? unexpectedInARow + 1 : 0
          const pollable = Errors.isRetryable(error) || isTransientTokenError(error) ||
            (error._tag === "UnexpectedResponse" && unexpectedInARow < maxUnexpectedInARow)
          if (!pollable) return yield* finish(new QuoteEvent.Failed({ transactionId, timestamp, error }))
          failuresInARow += 1
          observation = { ...observation, polls }
          delay = yield* planner.next(yield* Clock.currentTimeMillis, observation)
          if (Option.isSome(delay)) {
            yield* Effect.flatMap(retrying(transactionId, failuresInARow + 1, delay.value, error), emit)
          }
        }
      })

    /**
     * The events of `run` as a stream: `run` works in a fiber of the stream's
     * scope, emitting as it goes (to the bus, then to the stream); ending the
     * stream interrupts it.
     */
    const streamOf = <E>(
      run: (emit: (event: QuoteEvent.QuoteEvent) => Effect.Effect<void>) => Effect.Effect<unknown, E>
    ): Stream.Stream<QuoteEvent.QuoteEvent, E> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const queue = yield* Queue.unbounded<Take.Take<QuoteEvent.QuoteEvent, E>>()
        const emit = (event: QuoteEvent.QuoteEvent) =>
          bus.publish(event).pipe(Effect.zipRight(Queue.offer(queue, Take.of(event))))
        yield* run(emit).pipe(
          Effect.onExit((exit) => Queue.offer(queue, Exit.isSuccess(exit) ? Take.end : Take.failCause(exit.cause))),
          Effect.forkScoped
        )
        return Stream.fromQueue(queue).pipe(Stream.flattenTake)
      }))

    const track: Service["track"] = (transactionId, options = {}) =>
      streamOf((emit) => poll(transactionId, options, emit))

    /**
     * POSTs a quote and journals its transaction before anything can interrupt
     * between the two: once the service has answered, the transaction is
     * recorded (or the failure to record it logged) whatever happens to the
     * stream. A journal that cannot write does not end the quote: it goes on in
     * this process, without durability, and the failure is logged as an error.
     */
    const submit = (request: QuoteInput, options: QuoteOptions) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const created = yield* restore(client.createQuote(request, { requestId: options.requestId }))
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
              Effect.catchAll((error) =>
                Effect.logError(`journal: could not record a transaction in flight (${error.operation})`)
              ),
              Effect.annotateLogs({ transactionId: created.transactionId })
            )
          }
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
          })
          return { created, submitted, timestamp }
        })
      )

    /** Submits a quote and polls it to its end, emitting every event; returns the terminal one. */
    const run = (
      request: QuoteInput,
      options: QuoteOptions,
      emit: (event: QuoteEvent.QuoteEvent) => Effect.Effect<void>
    ): Effect.Effect<QuoteEvent.Terminal, Errors.QuoteFailure> =>
      Effect.flatMap(submit(request, options), ({ created, submitted, timestamp }) => {
        // A POST that answers completed needs no GET.
        const finished = created.quote.isCompleted
          ? Tracking.terminalFor(created.transactionId, created.quote, timestamp)
          : undefined
        return emit(submitted).pipe(
          Effect.zipRight(
            finished !== undefined
              ? Effect.as(emit(finished), finished)
              : poll(created.transactionId, {
                ...options,
                expectedCompletionTime: created.quote.expectedCompletionTime
              }, emit)
          )
        )
      })

    const quote: Service["quote"] = (request, options = {}) => streamOf((emit) => run(request, options, emit))

    // No stream: the events go to the bus only, and the terminal one decides the outcome.
    const getQuote: Service["getQuote"] = (request, options = {}) =>
      Effect.flatMap(
        run(request, options, bus.publish),
        (terminal): Effect.Effect<Quote.CompletedQuote, Errors.QuoteFailure> =>
          terminal._tag === "Completed" ? Effect.succeed(terminal.quote) : Effect.fail(terminal.error)
      )

    const quoteAll: Service["quoteAll"] = (requests, { concurrency, ...options }) =>
      Stream.fromIterable(requests).pipe(
        Stream.zipWithIndex,
        Stream.flatMap(([request, index]) =>
          quote(request, options).pipe(
            Stream.map((event): BatchEvent => ({ _tag: "Event", index, event })),
            Stream.catchAll((error) => Stream.succeed<BatchEvent>({ _tag: "Rejected", index, error }))
          ), { concurrency })
      )

    const resumeAll: Service["resumeAll"] = ({ concurrency, ...options } = {}) =>
      Stream.unwrap(
        journal.entries.pipe(
          Effect.map((entries) =>
            Stream.fromIterable(entries).pipe(
              Stream.flatMap((entry) => track(entry.transactionId, options), {
                concurrency: concurrency ?? defaultResumeConcurrency
              })
            )
          )
        )
      )

    return QuotePoller.of({ track, quote, getQuote, quoteAll, resumeAll })
  })

/**
 * The poller with its event bus and a journal in files under
 * `journalDirectory` (default `.gcx/journal`): the setup for a process that
 * must survive a restart. Needs the exchange client.
 */
export const layerDefault = (
  options: Options & { readonly journalDirectory?: string; readonly bus?: QuoteEvents.Options } = {}
): Layer.Layer<
  QuotePoller | QuoteEvents.QuoteEvents | QuoteJournal.QuoteJournal,
  QuoteJournal.JournalError,
  ExchangeClient.ExchangeClient
> =>
  layer(options).pipe(
    Layer.provideMerge(
      Layer.merge(
        QuoteEvents.layer(options.bus),
        QuoteJournal.layerFileSystem(options.journalDirectory ?? ".gcx/journal")
      )
    )
  )

/** The poller; needs the exchange client, the event bus and a journal. */
export const layer = (
  options?: Options
): Layer.Layer<
  QuotePoller,
  never,
  ExchangeClient.ExchangeClient | QuoteEvents.QuoteEvents | QuoteJournal.QuoteJournal
> => Layer.effect(QuotePoller, make(options))
