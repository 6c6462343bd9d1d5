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
 *   (`clientDeployment`).
 * - The card is sealed with `GCX_DATA_KEY` (32 bytes in base64), required;
 *   `GCX_DATA_KEY_PREVIOUS` still opens the cards sealed before a rotation.
 *
 * The commands keep their display: `durablePoller` is a `QuotePoller` whose
 * `quote`, `quoteAll` and `getQuote` submit through the workflow, and whose
 * stream shows the progress events the local runner publishes for the quote,
 * then its outcome as the workflow recorded it.
 */
import * as Errors from "@gcx/core/Errors"
import type * as Quote from "@gcx/core/Quote"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import type * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as QuoteJournal from "@gcx/poller/QuoteJournal"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as ClusterSecurity from "@gcx/workflow/ClusterSecurity"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import type * as QuoteWorkflow from "@gcx/workflow/QuoteWorkflow"
import * as Runner from "@gcx/workflow/Runner"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { ServeError } from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as Connection from "./Connection.js"

/** A layer of `A` that fails: the durable store (the quotes' journal) could not be opened. */
const unopened = <A>(message: string): Layer.Layer<A, QuoteJournal.JournalError> =>
  Layer.effectContext(Effect.fail(new QuoteJournal.JournalError({ operation: "open", message })))

/**
 * The deployment of a client-only node on the runners of `databaseUrl`
 * (`@gcx/workflow/Runner`), authenticated as `ClusterSecurity.securityConfig` says
 * (`GCX_RUNNER_TLS_*`, or `GCX_RUNNER_INSECURE_LOOPBACK=true`). A database that cannot be reached is a
 * `JournalError` that names it, as for the embedded file: the durable store is
 * the quotes' journal.
 */
export const clientDeployment = (
  databaseUrl: Redacted.Redacted<string>
): DurableQuotes.ClientDeployment<Config.ConfigError | QuoteJournal.JournalError> =>
  Layer.unwrap(
    Effect.map(
      Effect.all({ security: ClusterSecurity.securityConfig(), limits: ClusterSecurity.limitsConfig }),
      ({ limits, security }) => Runner.layerClient({ databaseUrl, security, limits })
    )
  ).pipe(
    Layer.catchTag("DatabaseUnreachable", (error) => unopened<Runner.Services>(error.message))
  )

/**
 * A durable quote's failure as the CLI reports it: an unknown requestId is a bad request; a card that cannot be
 * opened stays `CardDecryptionError`, a local fault of the data keys (exit 2), never the service's refusal.
 */
const toQuoteFailure = (
  error: QuoteWorkflow.DurableQuoteFailure | DurableQuotes.QuoteNotFound
): Errors.QuoteFailure => error._tag === "QuoteNotFound" ? new Errors.InvalidRequest({ message: error.message }) : error

/** The terminal event of a quote, from its recorded outcome. */
const terminalEvent = (
  exit: Exit.Exit<Quote.CompletedQuote, QuoteWorkflow.DurableQuoteFailure | DurableQuotes.QuoteNotFound>,
  transactionId: string | undefined
): Effect.Effect<QuoteEvent.Terminal> =>
  Effect.map(DateTime.now, (timestamp) =>
    Exit.match(exit, {
      onSuccess: (quote) => new QuoteEvent.Completed({ transactionId: quote.transactionId, timestamp, quote }),
      onFailure: (cause) => {
        const error = Option.match(Cause.findErrorOption(cause), {
          onNone: () => Errors.unexpectedResponse({}, "the durable quote ended with a defect"),
          onSome: toQuoteFailure
        })
        const known = "transactionId" in error && typeof error.transactionId === "string"
          ? error.transactionId
          : undefined
        return new QuoteEvent.Failed({ transactionId: known ?? transactionId ?? "", timestamp, error })
      }
    }))

/**
 * A poller whose `quote`, `quoteAll` and `getQuote` go through the durable
 * workflow; `track`, `trackAll` and `resumeAll` are the plain poller's.
 */
export const durablePoller = Effect.gen(function*() {
  const plain = yield* QuotePoller.QuotePoller
  const bus = yield* QuoteEvents.QuoteEvents
  const quotes = yield* DurableQuotes.DurableQuotes

  const quote: QuotePoller.Service["quote"] = (request, options = {}) =>
    Stream.unwrap(Effect.gen(function*() {
      // Subscribed before the submit: the local runner (embedded) publishes the quote's events here.
      const events = yield* bus.subscribe
      const requestId = yield* quotes.submit(request, { requestId: options.requestId }).pipe(
        Effect.mapError(toQuoteFailure)
      )
      const outcome = yield* Effect.forkScoped(Effect.exit(quotes.result(requestId)))
      let transactionId: string | undefined
      const progress = events.pipe(
        Stream.filter((event) => {
          if (event._tag === "Submitted" && event.requestId === requestId) transactionId = event.transactionId
          return event.transactionId === transactionId && !QuoteEvent.isTerminal(event)
        }),
        Stream.interruptWhen(Fiber.await(outcome))
      )
      return Stream.concat(
        progress,
        Stream.fromEffect(Effect.flatMap(Fiber.join(outcome), (exit) => terminalEvent(exit, transactionId)))
      )
    }))

  const getQuote: QuotePoller.Service["getQuote"] = (request, options = {}) =>
    quotes.execute(request, { requestId: options.requestId }).pipe(Effect.mapError(toQuoteFailure))

  const quoteAll: QuotePoller.Service["quoteAll"] = (requests, { concurrency, ...options }) =>
    Stream.fromIterable(requests).pipe(
      Stream.zipWithIndex,
      Stream.flatMap(([request, index]) =>
        quote(request, options).pipe(
          Stream.map((event): QuotePoller.BatchEvent => ({ _tag: "Event", index, event })),
          Stream.catch((error) => Stream.succeed<QuotePoller.BatchEvent>({ _tag: "Rejected", index, error }))
        ), { concurrency })
    )

  return QuotePoller.QuotePoller.of({ ...plain, quote, quoteAll, getQuote })
})

/** Where the embedded database lives: `GCX_DATABASE_FILE`, default `.gcx/gcx.db`. */
export const databaseFile: Config.Config<string> = Config.String("GCX_DATABASE_FILE").pipe(
  Config.withDefault(Embedded.defaultFilename)
)

/** What the durable layers of the CLI fail with: configuration, or the embedded database. */
type LayerError =
  | Config.ConfigError
  | QuoteJournal.JournalError
  | Layer.Error<ReturnType<typeof Embedded.layerQuotes>>

/** The services `--durable` provides to the commands. */
type Quotes<E> = Layer.Layer<
  DurableQuotes.DurableQuotes | QuotePoller.QuotePoller | QuoteEvents.QuoteEvents,
  E | LayerError,
  CardCipher.CardCipher
>

/** `GCX_DATABASE_URL`: set on a client-only node of runners on PostgreSQL, unset for the embedded deployment. */
export const databaseUrl: Config.Config<Option.Option<Redacted.Redacted<string>>> = Config.option(
  Config.Redacted("GCX_DATABASE_URL")
)

/**
 * The durable quotes of `--durable` over an exchange client: client-only when
 * `databaseUrl` (`GCX_DATABASE_URL`) is given, embedded on SQLite otherwise. The one place that
 * picks the deployment.
 */
export const layerQuotes = <E>(
  client: Layer.Layer<ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig, E>,
  databaseUrl: Option.Option<Redacted.Redacted<string>>
): Layer.Layer<
  DurableQuotes.DurableQuotes | QuotePoller.QuotePoller | QuoteEvents.QuoteEvents,
  E | LayerError
> =>
  Layer.unwrap(Effect.gen(function*() {
    if (Option.isSome(databaseUrl)) {
      const clientOnly: Quotes<E> = DurableQuotes.layerClient(clientDeployment(databaseUrl.value)).pipe(
        Layer.provideMerge(Connection.withPoller(client))
      )
      return clientOnly
    }
    const embedded: Quotes<E> = Embedded.layerQuotes({ filename: yield* databaseFile }).pipe(Layer.provide(client))
    return embedded
  })).pipe(Layer.provide(CardCipher.layerConfig()))

/**
 * The poller of `--durable` over the connection given by the flags and the
 * environment. A client-only node (`GCX_DATABASE_URL`) submits to runners that
 * serve real customers, so it never falls back to the embedded sandbox
 * (`Connection.Fallback` `"none"`). A database that cannot be opened is a
 * `JournalError` (the durable store is the quotes' journal).
 */
export const pollerLayer = (
  flags: Connection.Flags
): Layer.Layer<
  QuotePoller.QuotePoller | QuoteEvents.QuoteEvents | ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig,
  Config.ConfigError | ServeError | QuoteJournal.JournalError
> =>
  Layer.unwrap(Effect.gen(function*() {
    const url = yield* databaseUrl
    const client = Connection.layer(flags, Option.isSome(url) ? "none" : "embedded")
    return Layer.effect(QuotePoller.QuotePoller, durablePoller).pipe(
      Layer.provideMerge(layerQuotes(client, url)),
      Layer.provideMerge(client),
      Layer.catchTag(
        "SqlError",
        (error) =>
          unopened<
            | QuotePoller.QuotePoller
            | QuoteEvents.QuoteEvents
            | ExchangeClient.ExchangeClient
            | ExchangeConfig.ExchangeConfig
          >(error.message)
      )
    )
  }))
