/**
 * What `--durable` runs (`Durable.ts` loads this module on demand, so that
 * the commands run without it never load the cluster and the database
 * drivers): each quote of `gcx quote` and `gcx batch` goes through the
 * durable workflow of `@gcx/workflow` instead of this process's poller alone,
 * so that a quote outlives the process that submitted it.
 *
 * - Embedded on SQLite (`GCX_DATABASE_FILE`, default `.gcx/gcx.db`) when
 *   `GCX_DATABASE_URL` is unset: this process is the runner.
 * - Client-only when `GCX_DATABASE_URL` is set: the runners on that
 *   PostgreSQL run the quotes; this process submits and awaits them
 *   (`DurableDeployment.clientDeployment`).
 * - The card is sealed with `GCX_DATA_KEY` (32 bytes in base64), required;
 *   `GCX_DATA_KEY_PREVIOUS` still opens the cards sealed before a rotation.
 *
 * The commands keep their display: `durablePoller` is a `QuotePoller` whose
 * `quote`, `quoteAll` and `getQuote` submit through the workflow, and whose
 * stream shows the progress events the local runner publishes for the quote,
 * then its outcome as the workflow recorded it.
 */
import * as Errors from "@gcx/core/Errors"
import * as Quote from "@gcx/core/Quote"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import { maskCardNumber } from "@gcx/core/Redaction"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import type * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import type * as QuoteJournal from "@gcx/poller/QuoteJournal"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import type * as QuoteWorkflow from "@gcx/workflow/QuoteWorkflow"
import * as Cause from "effect/Cause"
import type * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { ServeError } from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Connection from "./Connection.js"
import * as DurableDeployment from "./DurableDeployment.js"
import type { CliError } from "./ExitCode.js"

/**
 * A durable quote's failure as the CLI reports it: an unknown requestId is a bad request; a card that cannot be
 * opened stays `CardDecryptionError`, a local fault of the data keys (exit 2), never the service's refusal.
 */
const toQuoteFailure = (
  error: QuoteWorkflow.DurableQuoteFailure | DurableQuotes.QuoteNotFound
): Errors.QuoteFailure => error._tag === "QuoteNotFound" ? new Errors.InvalidRequest({ message: error.message }) : error

/** Whether an outcome is a fault inside gcx (a defect), not the quote's: the quote may go on. */
export const isFault = (
  exit: Exit.Exit<Quote.CompletedQuote, QuoteWorkflow.DurableQuoteFailure | DurableQuotes.QuoteNotFound>
): boolean => Exit.isFailure(exit) && Option.isNone(Cause.findErrorOption(exit.cause))

/**
 * The terminal event of a quote `requestId`, from its recorded outcome. A fault inside gcx (a
 * defect, logged at debug level) is a `Failed` that says the outcome could not be read, and how to
 * read it later: the quote may go on.
 */
export const terminalEvent = (
  exit: Exit.Exit<Quote.CompletedQuote, QuoteWorkflow.DurableQuoteFailure | DurableQuotes.QuoteNotFound>,
  transactionId: string | undefined,
  requestId: string
): Effect.Effect<QuoteEvent.Terminal> =>
  Effect.map(
    isFault(exit) && Exit.isFailure(exit)
      ? Effect.andThen(Effect.logDebug("a durable quote's outcome could not be read", exit.cause), DateTime.now)
      : DateTime.now,
    (timestamp) =>
      Exit.match(exit, {
        onSuccess: (quote) => new QuoteEvent.Completed({ transactionId: quote.transactionId, timestamp, quote }),
        onFailure: (cause) => {
          const error = Option.match(Cause.findErrorOption(cause), {
            onNone: () =>
              new Errors.UnexpectedResponse({
                message: `the outcome of the durable quote ${requestId} could not be read (a fault inside gcx, at ` +
                  `--log-level debug); it may go on: gcx result ${requestId} --wait`
              }),
            onSome: toQuoteFailure
          })
          const known = "transactionId" in error && typeof error.transactionId === "string"
            ? error.transactionId
            : undefined
          return new QuoteEvent.Failed({ transactionId: known ?? transactionId ?? "", timestamp, error })
        }
      })
  )

/**
 * What an interrupted `gcx quote --durable` prints: the quote goes on, and how to fetch its outcome; or, on
 * the embedded sandbox, which ends with the process, that it cannot be resumed.
 */
export const interruptedLine = (requestId: string, embeddedSandbox = false): string =>
  embeddedSandbox
    ? `gcx: the durable quote ${requestId} was recorded, but its transaction was on the embedded sandbox, ` +
      `which ends with this process: it cannot be resumed (quote with the GCX_* variables of a service or of ` +
      `gcx sandbox)`
    : `gcx: the durable quote ${requestId} was recorded and goes on; its outcome: gcx result ${requestId} --wait`

/** The fields of a `Submitted` event, to make another. */
const fieldsOf = ({ _tag: _, ...fields }: QuoteEvent.Submitted) => fields

/** Settings of the durable poller. */
export interface Options {
  /**
   * A `quote` given no requestId takes the requestId of its card's unsettled
   * quote (`DurableQuotes.claim`), and settles it once its terminal event has
   * been shown: a quote interrupted and run again with the same card resumes
   * (no second POST); the same card quoted after its outcome was shown is a
   * new quote. For `gcx quote --durable`.
   */
  readonly resumeByCard?: boolean | undefined
  /** The client talks to the embedded sandbox, which ends with the process (said when interrupted). */
  readonly embeddedSandbox?: boolean | undefined
  /**
   * The quotes run on other nodes, whose events reach this one relayed in
   * batches (`EventRelay`, one per 50 ms) while the outcome comes at once: the
   * progress waits `relayGrace` after the outcome for the last batch. A
   * client-only node (`GCX_DATABASE_URL`).
   */
  readonly relayed?: boolean | undefined
}

/** How long a client-only node waits after an outcome for the runner's last batch of events (`Options.relayed`). */
export const relayGrace = "250 millis"

/**
 * A poller whose `quote`, `quoteAll` and `getQuote` go through the durable
 * workflow; `track`, `trackAll` and `resumeAll` are the plain poller's.
 */
export const durablePoller = (pollerOptions: Options = {}) =>
  Effect.gen(function*() {
    const plain = yield* QuotePoller.QuotePoller
    const bus = yield* QuoteEvents.QuoteEvents
    const quotes = yield* DurableQuotes.DurableQuotes

    /** One quote; `onInterrupt`: an interrupted stream says how to fetch the quote's outcome later. */
    const follow = (
      request: QuotePoller.QuoteInput,
      options: QuotePoller.TrackOptions & QuotePoller.QuoteOptions,
      onInterrupt: boolean
    ) =>
      Stream.unwrap(Effect.gen(function*() {
        // Subscribed before the submit: the runner publishes the quote's events here (a client-only node's
        // bus hears the runners' through `EventRelay`).
        const events = yield* bus.subscribe
        // `gcx quote --durable` without a requestId: the one of the card's unfinished quote, settled once shown
        const byCard = onInterrupt && pollerOptions.resumeByCard === true && options.requestId === undefined
        const chosen = byCard ? yield* quotes.claim(request) : options.requestId
        const requestId = yield* quotes.submit(request, { requestId: chosen }).pipe(
          Effect.mapError(toQuoteFailure)
        )
        const outcome = yield* Effect.forkScoped(Effect.exit(quotes.result(requestId)))
        if (onInterrupt) {
          yield* Effect.addFinalizer((exit) =>
            Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause) && outcome.pollUnsafe() === undefined
              ? Console.error(interruptedLine(requestId, pollerOptions.embeddedSandbox))
              : Effect.void
          )
        }
        const card = request instanceof Quote.QuoteRequest ? request.card.masked : maskCardNumber(request.cardNumber)
        let transactionId: string | undefined
        const progress = events.pipe(
          Stream.filter((event) => {
            if (event._tag === "Submitted" && event.requestId === requestId) transactionId = event.transactionId
            // before `Submitted`, the POST's `Retrying` events name the requestId (e.g. the workflow's pause)
            if (event._tag === "Retrying" && event.transactionId === "") return event.requestId === requestId
            return event.transactionId === transactionId && !QuoteEvent.isTerminal(event)
          }),
          // a runner relays `Submitted` without the card: this node shows its own, masked
          Stream.map((event) =>
            event._tag === "Submitted" && event.card === undefined
              ? new QuoteEvent.Submitted({ ...fieldsOf(event), card }, { disableChecks: true })
              : event
          ),
          // a runner's events come in batches (`EventRelay`): an outcome that comes first waits a moment for
          // the last batch (its progress), or for `Submitted` when none has come
          Stream.interruptWhen(
            Fiber.await(outcome).pipe(
              Effect.andThen(
                Effect.suspend(() =>
                  pollerOptions.relayed === true
                    ? Effect.sleep(relayGrace)
                    : transactionId === undefined
                    ? Effect.sleep("300 millis")
                    : Effect.void
                )
              )
            )
          )
        )
        const terminal = Stream.fromEffect(
          Effect.flatMap(Fiber.join(outcome), (exit) => terminalEvent(exit, transactionId, requestId))
        )
        // Pulled once the terminal event has been handled (shown): the card's next quote is a new one. Not
        // after a fault inside gcx: the quote may go on, and the card's next quote resumes it.
        const settle = Stream.fromEffect(
          Effect.flatMap(
            Fiber.join(outcome),
            (exit) => isFault(exit) ? Effect.void : Effect.ignore(quotes.settle(request, requestId))
          )
        ).pipe(Stream.drain)
        return Stream.concat(Stream.concat(progress, terminal), byCard ? settle : Stream.empty)
      }))

    const quote: QuotePoller.Service["quote"] = (request, options = {}) => follow(request, options, true)

    const getQuote: QuotePoller.Service["getQuote"] = (request, options = {}) =>
      quotes.execute(request, { requestId: options.requestId }).pipe(Effect.mapError(toQuoteFailure))

    const quoteAll: QuotePoller.Service["quoteAll"] = (requests, { concurrency, ...options }) =>
      Stream.fromIterable(requests).pipe(
        Stream.zipWithIndex,
        Stream.flatMap(([request, index]) =>
          follow(request, options, false).pipe(
            Stream.map((event): QuotePoller.BatchEvent => ({ _tag: "Event", index, event })),
            Stream.catch((error) => Stream.succeed<QuotePoller.BatchEvent>({ _tag: "Rejected", index, error }))
          ), { concurrency })
      )

    return QuotePoller.QuotePoller.of({ ...plain, quote, quoteAll, getQuote })
  })

/** Settings of `pollerLayer`: the poller's, and what it does without connection settings. */
export interface LayerOptions extends Options {
  /** `"none"` for a command that must not invent a service (`gcx result`); `"embedded"` by default. */
  readonly fallback?: Connection.Fallback | undefined
  /** What the command does with the quotes; `"submit"` by default. */
  readonly purpose?: DurableDeployment.Purpose | undefined
}

/** What `pollerLayer` provides. */
type Provided =
  | DurableQuotes.DurableQuotes
  | QuotePoller.QuotePoller
  | QuoteEvents.QuoteEvents
  | ExchangeClient.ExchangeClient
  | ExchangeConfig.ExchangeConfig

/**
 * The poller of `--durable` over the connection given by the flags and the
 * environment. A client-only node (`GCX_DATABASE_URL`) submits to runners that
 * serve real customers, so it never falls back to the embedded sandbox
 * (`Connection.Fallback` `"none"`); nor does a command given `fallback`
 * `"none"`. On the embedded sandbox, the quotes are kept in a file of their
 * own (`DurableDeployment.sandboxDatabaseFile`), never in `GCX_DATABASE_FILE`. An embedded
 * database that another process holds is a `CliError` (exit 2); one that
 * cannot be opened otherwise is a `JournalError` (the durable store is the
 * quotes' journal).
 */
export const pollerLayer = (
  flags: Connection.Flags,
  options?: LayerOptions
): Layer.Layer<
  | DurableQuotes.DurableQuotes
  | QuotePoller.QuotePoller
  | QuoteEvents.QuoteEvents
  | ExchangeClient.ExchangeClient
  | ExchangeConfig.ExchangeConfig,
  Config.ConfigError | ServeError | QuoteJournal.JournalError | CliError
> =>
  Layer.unwrap(Effect.gen(function*() {
    const url = yield* DurableDeployment.databaseUrl
    const fallback = Option.isSome(url) || options?.fallback === "none" ? "none" : "embedded"
    const client = Connection.layer(flags, fallback)
    const embeddedSandbox = Option.isSome(yield* Connection.embeddedReason(flags, fallback))
    const relayed = Option.isSome(url)
    return Layer.effect(QuotePoller.QuotePoller, durablePoller({ ...options, embeddedSandbox, relayed })).pipe(
      Layer.provideMerge(DurableDeployment.layerQuotes(client, url, embeddedSandbox, options?.purpose)),
      Layer.provideMerge(client),
      Layer.catchTag("SqlError", DurableDeployment.lockedOrUnopened<Provided>),
      Layer.catchTag("ServiceMismatch", DurableDeployment.serviceMismatch<Provided>)
    )
  }))
