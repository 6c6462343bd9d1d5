/**
 * The API of durable quotes: `submit` records a quote durably, `result`
 * awaits its outcome from any node, `execute` does both. The quote runs as
 * `QuoteWorkflow` on whichever runner owns it.
 *
 * A requestId belongs to one card (`RequestIds`): submitted again with the
 * same card it is the same quote; with another card, `RequestIdConflict`.
 * `result(requestId)` reads the deployment's database: only a node of the
 * cluster (with the database and the data key) can ask for an outcome.
 *
 * The layers keep the deployment (what provides the engine, `Engine`, and the
 * database: `Embedded.layer`, or runners over PostgreSQL) apart from the
 * quotes: `layerRunner(deployment)` for a node that runs quotes,
 * `layerClient(deployment)` for one that only submits and awaits.
 */
import * as Card from "@gcx/core/Card"
import * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import * as Quote from "@gcx/core/Quote"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as QuoteJournal from "@gcx/poller/QuoteJournal"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as EntityAddress from "effect/cluster/EntityAddress"
import * as EntityId from "effect/cluster/EntityId"
import * as EntityType from "effect/cluster/EntityType"
import * as MessageStorage from "effect/cluster/MessageStorage"
import * as Sharding from "effect/cluster/Sharding"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type { WorkflowEngine } from "effect/workflow/WorkflowEngine"
import * as CardCipher from "./CardCipher.js"
import * as EventLog from "./EventLog.js"
import * as StoreOutage from "./internal/storeOutage.js"
import * as QuoteWorkflow from "./QuoteWorkflow.js"
import * as RequestIds from "./RequestIds.js"

/**
 * `result` was asked for a requestId under which no quote was ever submitted
 * (in this deployment's database), or that is not a requestId at all. Names
 * the requestId only: there is no card to name.
 */
export class QuoteNotFound extends Schema.TaggedError<QuoteNotFound>()("QuoteNotFound", {
  requestId: Schema.String
}) {
  override get message(): string {
    const shown = this.requestId.length > 80 ? `${this.requestId.slice(0, 80)}…` : this.requestId
    return `no durable quote was submitted with requestId ${JSON.stringify(shown)}`
  }
}

/** What a deployment provides to the API: the engine, and the cluster's storage and sharding it runs on. */
export type Engine = WorkflowEngine | MessageStorage.MessageStorage | Sharding.Sharding

/** Options of one quote. */
export interface SubmitOptions {
  /**
   * The quote's requestId (its idempotency key); 32 random hex characters
   * unless given. It belongs to one card: given again with the same card, it
   * is the same quote; with another card, `RequestIdConflict`.
   */
  readonly requestId?: string | undefined
}

/** The durable quotes service. */
export interface Service {
  /**
   * Validates the card (before any I/O), records the requestId with the
   * card's keyed fingerprint, seals the card, and records the quote durably;
   * returns its requestId once recorded. Submitting a requestId again with
   * the same card records nothing new: the first quote of that requestId
   * stands. With another card it fails with `RequestIdConflict`.
   */
  readonly submit: (
    request: QuotePoller.QuoteInput,
    options?: SubmitOptions
  ) => Effect.Effect<string, Errors.InvalidCardInput | Errors.InvalidRequest | Errors.RequestIdConflict>
  /**
   * Awaits the outcome of a submitted quote, from any node of the deployment.
   * A requestId under which no quote was recorded (or that is not a
   * requestId) fails at once with `QuoteNotFound`: `submit` returns only once
   * its quote is in the database, so a quote submitted before the call is
   * always found. It waits through an outage of the database (a failure that
   * may pass by itself: the connection, a timeout), with one warning, and reads
   * the outcome once it is back; the caller bounds the wait (a timeout).
   */
  readonly result: (
    requestId: string
  ) => Effect.Effect<Quote.CompletedQuote, QuoteWorkflow.DurableQuoteFailure | QuoteNotFound>
  /**
   * The requestId of the card's unsettled quote, for a caller that quotes a
   * card without choosing a requestId and must resume the same quote after an
   * interruption (`gcx quote --durable`): the one an earlier `claim` of the
   * card recorded against its keyed fingerprint, until `settle`; a fresh one
   * otherwise. Validates the card before any I/O.
   */
  readonly claim: (request: QuotePoller.QuoteInput) => Effect.Effect<string, Errors.InvalidCardInput>
  /** Forgets the card's claim on `requestId` once its outcome is shown: the card's next `claim` starts a new quote. */
  readonly settle: (request: QuotePoller.QuoteInput, requestId: string) => Effect.Effect<void, Errors.InvalidCardInput>
  /**
   * Forgets the claim on `requestId` once its outcome is shown by requestId
   * (`gcx result`), whichever card made it: that card's next `claim` starts a
   * new quote.
   */
  readonly settleRequest: (requestId: string) => Effect.Effect<void>
  /**
   * The outcome of a submitted quote if it has one now, `None` while it runs; `QuoteNotFound` as
   * for `result`. Never waits: not for an outage of the database either (a defect).
   */
  readonly poll: (
    requestId: string
  ) => Effect.Effect<Option.Option<Exit.Exit<Quote.CompletedQuote, QuoteWorkflow.DurableQuoteFailure>>, QuoteNotFound>
  /** Submits a quote and awaits its outcome (a requestId recorded with another card: `RequestIdConflict`). */
  readonly execute: (
    request: QuotePoller.QuoteInput,
    options?: SubmitOptions
  ) => Effect.Effect<Quote.CompletedQuote, QuoteWorkflow.DurableQuoteFailure>
}

/** The durable quotes service. */
export class DurableQuotes extends Context.Service<DurableQuotes, Service>()("@gcx/workflow/DurableQuotes") {}

/** Settings of the API. */
export interface Options {
  /** How often `result` reads the stored outcome at most (it starts at 10 ms and backs off to this). Default 500 ms. */
  readonly resultPollInterval?: Duration.Input | undefined
}

const isRequestId = Schema.is(Ids.RequestId)
// the requestIds of quotes recorded by earlier versions are still looked up
const isStoredRequestId = Schema.is(Ids.StoredRequestId)

/** The spans' options: no stack trace, which costs more CPU than the rest of a span (about 15 µs a quote). */
const untraced = { captureStackTrace: false } as const

/** Builds the API over the engine, the cipher and the database in context (creates the requestIds' table). */
export const make = (
  options: Options = {}
): Effect.Effect<Service, SqlError.SqlError, Engine | CardCipher.CardCipher | SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const cipher = yield* CardCipher.CardCipher
    const requestIds = yield* RequestIds.make
    const storage = yield* MessageStorage.MessageStorage
    const sharding = yield* Sharding.Sharding
    const context = yield* Effect.context<WorkflowEngine>()
    const resultSchedule = Schedule.min([
      Schedule.exponential("10 millis", 2),
      Schedule.spaced(options.resultPollInterval ?? "500 millis")
    ])

    /**
     * The payload of a quote (validated input, sealed card; bad input fails
     * before any I/O) and the execution id recorded for its requestId.
     */
    const payload = (request: QuotePoller.QuoteInput, submitOptions: SubmitOptions = {}) =>
      Effect.gen(function*() {
        const requestId = submitOptions.requestId ?? Ids.makeRequestId()
        if (!isRequestId(requestId)) {
          return yield* new Errors.InvalidRequest({ message: `requestId must be ${Ids.requestIdRule}` })
        }
        const card = yield* validated(request)
        // the same requestId and card each time: the store keeps one record, with one execution id
        const executionId = yield* StoreOutage.throughOutages(
          requestIds.register(requestId, card),
          "a requestId's record"
        )
          .pipe(Effect.catchTag("SqlError", Effect.die))
        const payload: QuoteWorkflow.Payload = { requestId, card: yield* cipher.seal(card, requestId) }
        return { payload, executionId }
      })

    const submit: Service["submit"] = (request, submitOptions) =>
      payload(request, submitOptions).pipe(
        // under its execution id, the engine keeps one run request however often it is sent
        Effect.tap(({ executionId, payload }) =>
          StoreOutage.throughOutages(QuoteWorkflow.record(payload, executionId), "a quote's submission")
        ),
        Effect.map(({ payload }) => payload.requestId),
        Effect.provide(context),
        Effect.withSpan("DurableQuotes.submit", undefined, untraced)
      )

    /**
     * Whether the engine holds the workflow's `run` request for `executionId`
     * (what `submit` records before it returns), read from the cluster's
     * storage as the engine itself looks it up.
     */
    const isRecorded = (executionId: string) => {
      const entityId = EntityId.make(executionId)
      const group = Context.get(QuoteWorkflow.QuoteWorkflow.annotations, ClusterSchema.ShardGroup)(entityId)
      return storage.requestIdForPrimaryKey({
        address: EntityAddress.make({
          entityType: EntityType.make(`Workflow/${QuoteWorkflow.name}`),
          entityId,
          shardId: sharding.getShardId(entityId, group)
        }),
        tag: "run",
        id: ""
      }).pipe(Effect.map(Option.isSome), Effect.orDie)
    }

    /** Reads the stored outcome until there is one, backing off from 10 ms to `resultPollInterval`. */
    const awaitOutcome = (requestId: string, executionId: string) =>
      Effect.gen(function*() {
        const sleep = yield* Schedule.toStepWithSleep(resultSchedule)
        let recorded = false
        while (true) {
          const result = yield* StoreOutage.throughOutages(
            QuoteWorkflow.QuoteWorkflow.poll(executionId),
            "a quote's outcome"
          )
          if (Option.isSome(result) && result.value._tag === "Complete") return yield* result.value.exit
          // Once recorded, a quote stays recorded: the storage is asked once.
          if (
            !recorded && !(recorded = yield* StoreOutage.throughOutages(isRecorded(executionId), "a quote's record"))
          ) {
            return yield* new QuoteNotFound({ requestId })
          }
          yield* Effect.orDie(sleep(undefined))
        }
      })

    /** The execution id recorded for `requestId` (`RequestIds`); never recorded: `QuoteNotFound`. */
    const recordedExecution = (requestId: string, throughOutages: boolean) =>
      (throughOutages
        ? StoreOutage.throughOutages(requestIds.lookup(requestId), "a requestId's quote")
        : requestIds.lookup(requestId)).pipe(
          Effect.orDie,
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new QuoteNotFound({ requestId })),
            onSome: Effect.succeed
          }))
        )

    const result: Service["result"] = (requestId) =>
      Effect.suspend(() =>
        isStoredRequestId(requestId)
          ? Effect.flatMap(recordedExecution(requestId, true), (executionId) => awaitOutcome(requestId, executionId))
          : Effect.fail(new QuoteNotFound({ requestId }))
      ).pipe(
        Effect.provide(context),
        Effect.withSpan("DurableQuotes.result", { attributes: { requestId } }, untraced)
      )

    const poll: Service["poll"] = (requestId) =>
      Effect.suspend(() =>
        isStoredRequestId(requestId)
          ? Effect.flatMap(recordedExecution(requestId, false), (executionId) =>
            Effect.flatMap(QuoteWorkflow.QuoteWorkflow.poll(executionId), (result) =>
              Option.isSome(result) && result.value._tag === "Complete"
                ? Effect.succeedSome(result.value.exit)
                : Effect.flatMap(
                  isRecorded(executionId),
                  (recorded) => recorded ? Effect.succeedNone : Effect.fail(new QuoteNotFound({ requestId }))
                )))
          : Effect.fail(new QuoteNotFound({ requestId }))
      ).pipe(
        Effect.provide(context),
        Effect.withSpan("DurableQuotes.poll", { attributes: { requestId } }, untraced)
      )

    const execute: Service["execute"] = (request, submitOptions) =>
      payload(request, submitOptions).pipe(
        Effect.flatMap(({ executionId, payload }) =>
          StoreOutage.throughOutages(QuoteWorkflow.execute(payload, executionId), "a quote's outcome")
        ),
        Effect.provide(context),
        Effect.withSpan("DurableQuotes.execute", undefined, untraced)
      )

    const validated = (request: QuotePoller.QuoteInput) =>
      request instanceof Quote.QuoteRequest ? Effect.succeed(request.card) : Card.validate(request)

    const claim: Service["claim"] = (request) =>
      Effect.flatMap(validated(request), (card) => Effect.orDie(requestIds.claim(card))).pipe(
        Effect.withSpan("DurableQuotes.claim", undefined, untraced)
      )

    const settle: Service["settle"] = (request, requestId) =>
      Effect.flatMap(validated(request), (card) => Effect.orDie(requestIds.settle(card, requestId))).pipe(
        Effect.withSpan("DurableQuotes.settle", { attributes: { requestId } }, untraced)
      )

    const settleRequest: Service["settleRequest"] = (requestId) =>
      Effect.orDie(requestIds.settleRequest(requestId)).pipe(
        Effect.withSpan("DurableQuotes.settleRequest", { attributes: { requestId } }, untraced)
      )

    return DurableQuotes.of({ submit, result, poll, execute, claim, settle, settleRequest })
  })

/** The API; needs the engine and the database of a deployment, and the cipher. */
export const layer = (
  options?: Options
): Layer.Layer<DurableQuotes, SqlError.SqlError, Engine | SqlClient.SqlClient | CardCipher.CardCipher> =>
  Layer.effect(DurableQuotes, make(options))

/** Settings of a node that runs quotes. */
export interface RunnerOptions extends Options {
  /** How the runner polls its quotes (schedule, deadline). */
  readonly track?: QuoteWorkflow.Options | undefined
  /** The runner's poller (`maxConcurrentPolls`, defaults). */
  readonly poller?: QuotePoller.Options | undefined
  /** The runner's local event bus. */
  readonly bus?: QuoteEvents.Options | undefined
  /** The writer of the runner's quote events into the event log (`EventLog.layerWriter`). */
  readonly events?: EventLog.WriterOptions | undefined
}

/**
 * A node that runs quotes, over a deployment that provides the engine and the
 * database: the API, the registered `QuoteWorkflow`, and the poller with its
 * local `QuoteEvents` bus (the events of the quotes this node runs), whose
 * events, and each quote's outcome, are recorded in the event log
 * (`EventLog.layerWriter`). The engine's storage is the journal: the poller
 * keeps none of its own.
 */
export const layerRunner = <E, R>(
  deployment: Layer.Layer<Engine | SqlClient.SqlClient, E, R>,
  options: RunnerOptions = {}
): Layer.Layer<
  DurableQuotes | QuotePoller.QuotePoller | QuoteEvents.QuoteEvents | Engine | SqlClient.SqlClient,
  E | SqlError.SqlError,
  R | ExchangeClient.ExchangeClient | CardCipher.CardCipher
> =>
  Layer.merge(layer(options), recordedWorkflow(options)).pipe(
    Layer.provideMerge(
      QuotePoller.layer(options.poller).pipe(
        Layer.provideMerge(QuoteEvents.layer(options.bus)),
        Layer.provide(QuoteJournal.layerNoop)
      )
    ),
    Layer.provideMerge(deployment)
  )

/** The quote workflow, its events and outcomes recorded in the event log. */
const recordedWorkflow = (options: RunnerOptions) =>
  QuoteWorkflow.layer(options.track).pipe(Layer.provide(EventLog.layerWriter(options.events)))

/**
 * The deployment with `outcomes` built over it: a layer that provides
 * `QuoteWorkflow.QuoteOutcomes` (composed with the publisher in context), so
 * that the quote workflow registered over the result tells it every outcome
 * (e.g. the gateway's webhooks, `WebhookDelivery.layer`). None: the deployment.
 */
export const withOutcomes = <A, E, R, E2 = never, R2 = never>(
  deployment: Layer.Layer<A, E, R>,
  outcomes?: Layer.Layer<never, E2, R2> | undefined
): Layer.Layer<A, E | E2, R | Exclude<R2, A>> =>
  outcomes === undefined ? deployment : Layer.provideMerge(outcomes, deployment)

/**
 * The deployment of a client-only node: what provides the workflow engine
 * (and the cluster under it) and the database (the requestIds).
 */
export type ClientDeployment<E = never, R = never> = Layer.Layer<Engine | SqlClient.SqlClient, E, R>

/** A node that submits and awaits quotes but runs none, over a deployment that provides the engine and the database. */
export const layerClient = <E, R>(
  deployment: Layer.Layer<Engine | SqlClient.SqlClient, E, R>,
  options: Options = {}
): Layer.Layer<DurableQuotes | Engine | SqlClient.SqlClient, E | SqlError.SqlError, R | CardCipher.CardCipher> =>
  layer(options).pipe(Layer.provideMerge(deployment))
