/**
 * The quote poller: submits quotes and polls their transactions on a
 * `Schedule`, as a typed `Stream` of `QuoteEvent`s. Every event is also
 * published on `QuoteEvents`, and every transaction in flight is kept in the
 * `QuoteJournal` until its outcome is known.
 */
import type { Quote } from "@gcx/core"
import { Errors, QuoteEvent } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import type * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as CardFingerprint from "./CardFingerprint.js"
import * as RequestIds from "./internal/requestIds.js"
import * as Scheduler from "./internal/scheduler.js"
import * as Sinks from "./internal/sinks.js"
import * as Submission from "./internal/submission.js"
import * as Metrics from "./Metrics.js"
import * as PollSchedule from "./PollSchedule.js"
import * as QuoteEvents from "./QuoteEvents.js"
import * as QuoteJournal from "./QuoteJournal.js"

/** How to poll one transaction. */
export interface TrackOptions {
  /** The schedule, or the settings of the default one (`PollSchedule.make`). */
  readonly schedule?: PollSchedule.PollSchedule | PollSchedule.Options | undefined
  /** How long to poll before giving up with `PollTimeout`. Default 2 minutes. */
  readonly deadline?: Duration.Input | undefined
  /** The service's `expectedCompletionTime` when it is already known (from the POST). */
  readonly expectedCompletionTime?: number | undefined
}

/** How to submit and poll one quote. */
export interface QuoteOptions extends TrackOptions {
  /**
   * The idempotency key of the POST; 32 random hex characters unless given.
   * A requestId belongs to one card: given again with another card, the
   * quote fails with `RequestIdConflict` before any I/O; given again with the
   * same card, the POST is sent again with `previousAttempts` counted on, and
   * the service answers the original transaction. The poller remembers the
   * last `Options.rememberedRequestIds` requestIds it was given.
   */
  readonly requestId?: string | undefined
  /**
   * Attempts of this same requestId made before (default 0): the POST sends
   * it as `previousAttempts`, and each retry one more, so a resumed POST is
   * answered with the transaction of an earlier attempt instead of a new one.
   */
  readonly previousAttempts?: number | undefined
  /**
   * Runs before each retry of the POST is sent, and the retry waits for it:
   * where a caller records durably the `previousAttempts` it is about to send
   * (the event's `attempt` minus 1).
   */
  readonly beforeRetry?: ((event: QuoteEvent.Retrying) => Effect.Effect<void>) | undefined
}

/**
 * Whether a quote that ended with an error of this tag may still have an
 * outcome to learn by tracking its transaction again: `PollTimeout`, and
 * failures of the client's own credentials or configuration. After any other
 * failure, the transaction's outcome is known.
 */
export const isOutcomeUnknown: (errorTag: string) => boolean = Scheduler.isOutcomeUnknown

/** What a quote is submitted from: a validated request, or card input that is validated before any I/O. */
export type QuoteInput = Submission.QuoteInput

/** One event of a batch, keyed by the index of its request. */
export type BatchEvent =
  | { readonly _tag: "Event"; readonly index: number; readonly event: QuoteEvent.QuoteEvent }
  /** The request was refused before a transaction existed (bad input, a POST that failed). */
  | { readonly _tag: "Rejected"; readonly index: number; readonly error: Errors.QuoteFailure }

/** A transaction to track, with the service's `expectedCompletionTime` when it is known. */
export interface TrackTarget {
  readonly transactionId: string
  readonly expectedCompletionTime?: number | undefined
}

/** The poller service. */
export interface Service {
  /** Polls a transaction until it completes or fails: `Progress`, `StepCompleted`, `Retrying`, then one terminal event. */
  readonly track: (transactionId: string, options?: TrackOptions) => Stream.Stream<QuoteEvent.QuoteEvent>
  /**
   * Polls many transactions at once, as one stream of all their events, which
   * ends after the last terminal event. Each transaction costs a record, not a
   * fiber: the way to follow thousands at once.
   */
  readonly trackAll: (
    transactions: Iterable<string | TrackTarget>,
    options?: Omit<TrackOptions, "expectedCompletionTime">
  ) => Stream.Stream<QuoteEvent.QuoteEvent>
  /**
   * Submits a quote, then tracks it, as one stream that begins with
   * `Submitted` (after a `Retrying` for each retry of its POST). It fails only
   * when no transaction was created (bad input, bad polling options, a refused
   * or failed POST); every later failure is a `Failed` event.
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
  /** Tracks every transaction in the journal again, all at once (`trackAll`), for a process that restarts. */
  readonly resumeAll: (options?: Omit<TrackOptions, "expectedCompletionTime">) => Stream.Stream<QuoteEvent.QuoteEvent>
}

/** The poller service. */
export class QuotePoller extends Context.Service<QuotePoller, Service>()("@gcx/poller/QuotePoller") {}

/** Defaults for every call; each call's options override them. */
export interface Options {
  readonly schedule?: PollSchedule.PollSchedule | PollSchedule.Options | undefined
  readonly deadline?: Duration.Input | undefined
  /** How many GETs may be in flight at once, over every quote of this poller. Default 64. */
  readonly maxConcurrentPolls?: number | undefined
  /**
   * How many of the requestIds callers gave (`QuoteOptions.requestId`) the
   * poller remembers with their cards' fingerprints, the oldest forgotten
   * first. Default 100,000 (at most about 30 MB).
   */
  readonly rememberedRequestIds?: number | undefined
  /** How cards are fingerprinted for `rememberedRequestIds`. Default: HMAC-SHA-256 under a key drawn for this poller. */
  readonly cardFingerprint?: CardFingerprint.CardFingerprint | undefined
}

/** How many requestIds given by callers the poller remembers by default. */
export const defaultRememberedRequestIds = 100_000

/** How many GETs the poller has in flight at once by default. */
export const defaultMaxConcurrentPolls = 64

/** The default polling deadline. */
export const defaultDeadline: Duration.Duration = Duration.minutes(2)

/**
 * What is wrong with polling options, if anything: a `deadline` that is not a
 * duration of at least zero, or a plain `schedule`'s problem
 * (`PollSchedule.problem`). The poller refuses them with it.
 */
export const optionsProblem = (
  options: { readonly schedule?: TrackOptions["schedule"]; readonly deadline?: Duration.Input | undefined }
): string | undefined =>
  (options.deadline === undefined ? undefined : PollSchedule.durationProblem("deadline", options.deadline)) ??
    (options.schedule === undefined || Schedule.isSchedule(options.schedule)
      ? undefined
      : PollSchedule.problem(options.schedule))

const resolveSchedule = (schedule: TrackOptions["schedule"]): PollSchedule.PollSchedule =>
  Schedule.isSchedule(schedule) ? schedule : PollSchedule.make(schedule ?? {})

const toTarget = (transaction: string | TrackTarget): Scheduler.Target =>
  typeof transaction === "string" ? { transactionId: transaction } : transaction

/**
 * Builds the poller over the client, the bus and the journal in context. Its
 * polling engine (one fiber, and one per GET in flight) lives as long as
 * `Scope`.
 */
export const make = (
  defaults: Options = {}
): Effect.Effect<
  Service,
  never,
  ExchangeClient.ExchangeClient | QuoteEvents.QuoteEvents | QuoteJournal.QuoteJournal | Scope.Scope
> =>
  Effect.gen(function*() {
    const client = yield* ExchangeClient.ExchangeClient
    const bus = yield* QuoteEvents.QuoteEvents
    const journal = yield* QuoteJournal.QuoteJournal

    const forget = (transactionId: string) =>
      journal.remove(transactionId).pipe(
        Effect.catch((error) => Effect.logWarning(`journal: could not remove a transaction: ${error.message}`)),
        Effect.annotateLogs({ transactionId })
      )

    const maxConcurrentPolls = defaults.maxConcurrentPolls ?? defaultMaxConcurrentPolls
    if (!Number.isSafeInteger(maxConcurrentPolls) || maxConcurrentPolls < 1) {
      return yield* Effect.die(
        new Error(`QuotePoller: maxConcurrentPolls must be a whole number of at least 1, not ${maxConcurrentPolls}`)
      )
    }
    const badDefault = optionsProblem(defaults)
    if (badDefault !== undefined) return yield* Effect.die(new RangeError(`QuotePoller: ${badDefault}`))
    const rememberedRequestIds = defaults.rememberedRequestIds ?? defaultRememberedRequestIds
    if (!Number.isSafeInteger(rememberedRequestIds) || rememberedRequestIds < 1) {
      return yield* Effect.die(
        new Error(`QuotePoller: rememberedRequestIds must be a whole number of at least 1, not ${rememberedRequestIds}`)
      )
    }
    const scheduler = yield* Scheduler.make({
      client,
      publish: bus.publish,
      finished: (transactionId, terminal) =>
        Scheduler.keepsJournalEntry(terminal) ? Effect.void : forget(transactionId),
      maxConcurrentPolls
    })

    /** The call's polling options over the poller's; an `InvalidRequest` naming a bad one. */
    const watchOptions = (
      options: Omit<TrackOptions, "expectedCompletionTime">
    ): Result.Result<Scheduler.WatchOptions, Errors.InvalidRequest> => {
      const schedule = options.schedule ?? defaults.schedule
      const deadline = options.deadline ?? defaults.deadline ?? defaultDeadline
      const problem = optionsProblem({ schedule, deadline })
      return problem !== undefined
        ? Result.fail(new Errors.InvalidRequest({ message: problem }))
        : Result.succeed({ schedule: resolveSchedule(schedule), deadlineMillis: Duration.toMillis(deadline) })
    }

    /**
     * The targets' events. Bad options are a defect that names them, and nothing is polled: a
     * transaction that exists is never ended by them (a `Failed` would be final, for a durable
     * quote too), and `quote` and `getQuote` refuse them before their POST.
     */
    const watchStream = (
      targets: ReadonlyArray<Scheduler.Target>,
      options: Omit<TrackOptions, "expectedCompletionTime">
    ) =>
      Result.match(watchOptions(options), {
        onSuccess: (watch) => Sinks.watchStream(scheduler, targets, watch),
        onFailure: (error) => Effect.die(new RangeError(`QuotePoller: ${error.message}`))
      })

    const track: Service["track"] = (transactionId, options = {}) =>
      Stream.unwrap(watchStream([{ transactionId, expectedCompletionTime: options.expectedCompletionTime }], options))

    const trackAll: Service["trackAll"] = (transactions, options = {}) =>
      Stream.unwrap(Effect.suspend(() => watchStream(Array.from(transactions, toTarget), options)))

    const submission: Submission.Dependencies = {
      client,
      bus,
      journal,
      requestIds: RequestIds.make(rememberedRequestIds, defaults.cardFingerprint ?? CardFingerprint.random())
    }

    // One span per quote, parent of its POST and of every GET (which run with the caller's context).
    // The POST's retries reach the stream as they happen: the POST runs beside it and its events go through a queue.
    const quote: Service["quote"] = (request, options = {}) =>
      Stream.unwrap(Effect.gen(function*() {
        // bad polling options are refused before the POST
        const watch = yield* Effect.fromResult(watchOptions(options))
        const retries = yield* Queue.unbounded<QuoteEvent.QuoteEvent, Errors.QuoteFailure | Cause.Done>()
        const posting = yield* Submission.submit(
          submission,
          request,
          options,
          (event) =>
            Effect.andThen(Queue.offer(retries, event), options.beforeRetry ? options.beforeRetry(event) : Effect.void)
        ).pipe(
          Effect.onExit((exit) => Exit.isSuccess(exit) ? Queue.end(retries) : Queue.failCause(retries, exit.cause)),
          Effect.forkScoped
        )
        const rest = Stream.unwrap(Effect.gen(function*() {
          const { finished, submitted, target } = yield* Fiber.join(posting)
          if (finished !== undefined) return Stream.make(submitted, finished)
          return Stream.concat(Stream.succeed(submitted), yield* Sinks.watchStream(scheduler, [target], watch))
        }))
        return Stream.concat(Stream.fromQueue(retries), rest)
      })).pipe(
        (events) => Metrics.meterQuoteStream(events, QuoteEvent.isTerminal),
        Stream.withSpan("QuotePoller.quote", { captureStackTrace: false })
      )

    const getQuote: Service["getQuote"] = (request, options = {}) =>
      Effect.flatMap(Effect.fromResult(watchOptions(options)), (watch) =>
        Effect.flatMap(Submission.submit(submission, request, options), ({ finished, target }) =>
          finished !== undefined
            ? Effect.succeed(finished)
            : Sinks.awaitTerminal(scheduler, target, watch))).pipe(
          Effect.flatMap((terminal): Effect.Effect<Quote.CompletedQuote, Errors.QuoteFailure> =>
            terminal._tag === "Completed" ? Effect.succeed(terminal.quote) : Effect.fail(terminal.error)
          ),
          Metrics.meterQuote,
          Effect.withSpan("QuotePoller.getQuote", undefined, { captureStackTrace: false })
        )

    const quoteAll: Service["quoteAll"] = (requests, { concurrency, ...options }) =>
      Stream.fromIterable(requests).pipe(
        Stream.zipWithIndex,
        Stream.flatMap(([request, index]) =>
          quote(request, options).pipe(
            Stream.map((event): BatchEvent => ({ _tag: "Event", index, event })),
            Stream.catch((error) =>
              Stream.succeed<BatchEvent>({ _tag: "Rejected", index, error })
            )
          ), { concurrency })
      )

    const resumeAll: Service["resumeAll"] = (options = {}) =>
      Stream.unwrap(Effect.map(journal.entries, (entries) => trackAll(entries.map(toTarget), options)))

    return QuotePoller.of({ track, trackAll, quote, getQuote, quoteAll, resumeAll })
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

/**
 * The poller; needs the exchange client, the event bus and a journal.
 *
 * @example
 * import { Money } from "@gcx/core"
 * import { ExchangeClient } from "@gcx/http"
 * import * as UndiciClient from "@gcx/http/UndiciClient"
 * import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
 * import { Console, Effect, Layer } from "effect"
 *
 * const GcxLive = QuotePoller.layer().pipe(
 *   Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
 *   Layer.provide(ExchangeClient.layerConfig()), // the GCX_* variables
 *   Layer.provide(UndiciClient.layer)
 * )
 *
 * const program = Effect.gen(function*() {
 *   const poller = yield* QuotePoller.QuotePoller
 *   const quote = yield* poller.getQuote({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" })
 *   yield* Console.log(`offered ${Money.format(quote.exchangeCardValue)}`)
 * })
 *
 * Effect.runFork(program.pipe(Effect.provide(GcxLive)))
 */
export const layer = (
  options?: Options
): Layer.Layer<
  QuotePoller,
  never,
  ExchangeClient.ExchangeClient | QuoteEvents.QuoteEvents | QuoteJournal.QuoteJournal
> => Layer.effect(QuotePoller, make(options))
