/**
 * `gcx quote --card N --pin P --product ID [--json]`: submits one quote and
 * follows it to its end: a live progress bar on a terminal, one line per
 * event on a pipe, one JSON event per line with `--json`. It ends with the
 * quote's values, or fails with the quote's error. Its flags are in
 * `commands/Quote`.
 */
import type * as Card from "@gcx/core/Card"
import * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import type * as Quote from "@gcx/core/Quote"
import type * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import type * as Terminal from "effect/Terminal"
import * as Connection from "../Connection.js"
import * as Durable from "../Durable.js"
import * as ExitCode from "../ExitCode.js"
import * as Polling from "../Polling.js"
import * as Reachability from "../Reachability.js"
import * as Render from "../Render.js"

/** The outcome of a quote's event stream: the completed quote, or the quote's error. */
export const outcome = (
  last: Option.Option<QuoteEvent.QuoteEvent>
): Effect.Effect<Quote.CompletedQuote, Errors.QuoteFailure> =>
  Option.match(last, {
    onNone: () => Effect.fail(Errors.unexpectedResponse({}, "the quote ended without an outcome")),
    onSome: (event) =>
      event._tag === "Completed"
        ? Effect.succeed(event.quote)
        : event._tag === "Failed"
        ? Effect.fail(event.error)
        : Effect.fail(Errors.unexpectedResponse({ transactionId: event.transactionId }, "no terminal event"))
  })

/** Shows a quote's events in the mode for `json` and the terminal, and returns its outcome. */
export const follow = <E, R>(
  events: (mode: Render.Mode) => Stream.Stream<QuoteEvent.QuoteEvent, E, R>,
  json: boolean
): Effect.Effect<Quote.CompletedQuote, E | Errors.QuoteFailure, R | Terminal.Terminal | Stdio.Stdio> =>
  Effect.scoped(Effect.gen(function*() {
    const mode = yield* Render.mode(json)
    const show = yield* Render.quote(mode)
    return yield* events(mode).pipe(Stream.tap(show), Stream.runLast, Effect.flatMap(outcome))
  }))

/** Submits one quote (under `requestId`, after `previousAttempts`, when given) and follows it; fails with its error. */
export const run = (
  card: Card.CardInput,
  options: Polling.Flags & {
    readonly json: boolean
    readonly requestId?: Option.Option<string> | undefined
    readonly previousAttempts?: Option.Option<number> | undefined
  }
): Effect.Effect<
  Quote.CompletedQuote,
  Errors.QuoteFailure,
  QuotePoller.QuotePoller | Terminal.Terminal | Stdio.Stdio
> =>
  Effect.flatMap(
    QuotePoller.QuotePoller,
    (poller) =>
      follow(
        (mode) =>
          poller.quote(card, {
            ...Polling.trackOptions(options, mode),
            ...Option.match(options.requestId ?? Option.none(), {
              onNone: () => ({}),
              onSome: (requestId) => ({ requestId })
            }),
            ...Option.match(options.previousAttempts ?? Option.none(), {
              onNone: () => ({}),
              onSome: (previousAttempts) => ({ previousAttempts })
            })
          }),
        options.json
      )
  )

/** What `gcx quote` is given: its flags (`commands/Quote`). */
export interface Flags extends Polling.Flags {
  readonly card: Redacted.Redacted<string>
  readonly pin: Redacted.Redacted<string>
  readonly product: string
  readonly requestId: Option.Option<string>
  readonly previousAttempts: Option.Option<number>
  readonly json: boolean
  readonly durable: boolean
  readonly connection: Connection.Flags
}

const isRequestId = Schema.is(Ids.RequestId)

const usage = (message: string) => Effect.fail(new ExitCode.CliError({ code: ExitCode.ExitCode.Usage, message }))

/**
 * The end of the error line of a POST refused after its retries while an
 * attempt of it may have created the quote (`Errors.postResumption`): the
 * flags that resume it; empty for any other failure. A durable quote fails
 * so only after the workflow's own runs again, and its requestId then answers
 * that failure: the line says to resume it without `--durable` (its attempts
 * are the durable counter's).
 */
const resumeHint = (durable: boolean) => (error: Errors.QuoteFailure): string =>
  Option.match(Errors.postResumption(error), {
    onNone: () => "",
    onSome: ({ previousAttempts, requestId }) =>
      `; the quote may exist: resume it${durable ? " without --durable," : ""} with --request-id ${requestId} ` +
      `--previous-attempts ${previousAttempts}`
  })

/**
 * A failure whose POST may have created the quote, as its error line ending
 * with the flags that resume it (`resumeHint`); other failures pass as they
 * are. For `gcx result`, which shows a durable quote's stored failure.
 */
export const withResumeHint = (durable: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>) => {
  const hint = resumeHint(durable)
  return Effect.catchIf(
    effect,
    (error): error is E & Errors.QuoteFailure => ExitCode.isQuoteFailure(error) && hint(error) !== "",
    (error) =>
      Effect.fail(
        new ExitCode.CliError({
          code: ExitCode.ofQuoteFailure(error),
          message: `${ExitCode.describeQuoteFailure(error)}${hint(error)}`
        })
      )
  )
}

/**
 * `withResumeHint` over `Reachability.explain`: a failure with no answer also
 * names the host and the cause, then the flags that resume the POST.
 */
const resumable = (durable: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  withResumeHint(durable)(Reachability.explain(effect, resumeHint(durable)))

/**
 * The `quote` command's handler: the quote of the flags, on the connection (or `--durable`) they give.
 * With `--durable` and no `--request-id`, the quote takes the requestId of this card's unfinished quote
 * (`DurableQuotes.claim`): a run interrupted and run again resumes it, and POSTs nothing twice. A
 * durable quote counts its attempts in its database (and resumes a POST whose answers were lost by
 * itself): `--previous-attempts` is for a quote in this process only.
 */
export const handler = ({ card, connection, durable, pin, product, ...options }: Flags) => {
  if (Option.isSome(options.requestId) && !isRequestId(options.requestId.value)) {
    return usage(`--request-id must be ${Ids.requestIdRule}`)
  }
  if (Option.isSome(options.previousAttempts) && Option.isNone(options.requestId)) {
    return usage("--previous-attempts needs --request-id: the attempts made with that requestId")
  }
  if (Option.isSome(options.previousAttempts) && durable) {
    return usage("--previous-attempts is for a quote without --durable: a durable quote counts its attempts itself")
  }
  const quote = run({ cardNumber: card, pinNumber: pin, productLineId: product }, options)
  return durable
    ? quote.pipe(
      resumable(true),
      Effect.provide(Durable.pollerLayer(connection, { resumeByCard: Option.isNone(options.requestId) }))
    )
    : quote.pipe(resumable(false), Effect.provide(Connection.pollerLayer(connection)))
}
