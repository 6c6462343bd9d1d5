/**
 * The gateway's webhooks: each terminal outcome of a quote the gateway owns
 * (recorded in `gcx_gateway_quotes` when it was POSTed) is `POST`ed to every
 * webhook endpoint of the caller's key, signed (`WebhookSignature`), at least
 * once, with its event id (`Gcx-Event-Id`) for de-duplication.
 *
 * Each (event, endpoint) is one durable workflow (`DeliveryWorkflow`, its
 * execution id derived from both, so that an outcome told twice starts one
 * delivery), whose body is built once, when it starts, and persisted with it:
 * every attempt sends the same bytes. Each attempt is an activity (a 10 s
 * `POST`, no redirect followed); between failed ones the workflow sleeps on
 * the engine's durable clock, 10 s × 2^n capped at 1 h with jitter, until 24 h
 * have passed since the first attempt, then gives up. A restart of the
 * process (or the loss of a runner) resumes the deliveries in flight from the
 * database.
 *
 * `layer` registers the workflow with the deployment's engine and tells the
 * quotes' outcomes (`QuoteWorkflow.QuoteOutcomes`, composed with the
 * publisher already in context) to start the deliveries: provide it to the
 * quote workflow's layer on every node that runs quotes (the embedded
 * `gcx serve`, and each `gcx runner`).
 */
import * as UndiciClient from "@gcx/http/UndiciClient"
import type * as CardCipher from "@gcx/workflow/CardCipher"
import * as QuoteWorkflow from "@gcx/workflow/QuoteWorkflow"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Activity from "effect/workflow/Activity"
import * as DurableClock from "effect/workflow/DurableClock"
import * as Workflow from "effect/workflow/Workflow"
import { WorkflowEngine } from "effect/workflow/WorkflowEngine"
import * as ApiKeys from "./ApiKeys.js"
import * as Owners from "./internal/owners.js"
import * as Attempts from "./internal/webhooks/attempt.js"
import * as Backoff from "./internal/webhooks/backoff.js"
import * as QuoteView from "./QuoteView.js"

/** The table of the quotes the gateway owns: which key POSTed each (written by the API, read here). */
export const ownersTable = Owners.table

/** The type of a terminal event. */
export const EventType = Schema.Literals(["quote.completed", "quote.failed"])

/** A webhook's body: `{ id: "evt_<requestId>", type, created: <unix s>, data: <QuoteView> }`. */
export const Event = Schema.Struct({
  id: Schema.String,
  type: EventType,
  created: Schema.Number,
  data: QuoteView.QuoteView
})

/** A webhook's body. */
export type Event = typeof Event.Type

/** The event id of a quote's terminal outcome: `evt_<requestId>`. */
export const eventId = (requestId: string): string => `evt_${requestId}`

/**
 * The terminal event of an outcome, at `created` (unix seconds). Its `data`
 * is the quote as it ended: the status, `percentComplete` 100 (the quote is
 * over, either way), the values or the error (`QuoteView.failureOf`: never
 * the service's own message); `steps` empty: they are those of
 * `GET /v1/quotes/{id}`, not repeated here.
 */
export const eventOf = (outcome: QuoteWorkflow.Outcome, created: number): Event => {
  const id = outcome.requestId
  const base = { id, steps: [], links: QuoteView.links(id) }
  if (Exit.isSuccess(outcome.exit)) {
    const data = {
      ...base,
      status: "completed" as const,
      percentComplete: 100,
      outcome: QuoteView.outcomeOf(outcome.exit.value)
    }
    return { id: eventId(id), type: "quote.completed", created, data }
  }
  const error = Exit.isFailure(outcome.exit)
    ? Option.getOrUndefined(Cause.findErrorOption(outcome.exit.cause))
    : undefined
  const failure = error === undefined ? { code: "Defect", group: "durable" } : QuoteView.failureOf(error)
  return {
    id: eventId(id),
    type: "quote.failed",
    created,
    data: { ...base, status: "failed", percentComplete: 100, error: failure }
  }
}

/** What the engine persists of a delivery: the event, the endpoint and the body, built once. Never a secret. */
export const Payload = Schema.Struct({
  eventId: Schema.String,
  endpointId: Schema.String,
  keyId: Schema.String,
  body: Schema.String
})

/** The end of a delivery: accepted by the receiver, or given up; after how many attempts. */
export const Result = Schema.Struct({
  delivered: Schema.Boolean,
  attempts: Schema.Number
})

/** The name of the workflow, and the prefix of its activities. */
export const name = "GcxWebhookDelivery"

/** The delivery of one event to one endpoint; its execution id is derived from both. */
export const DeliveryWorkflow = Workflow.make(name, {
  payload: Payload,
  success: Result,
  idempotencyKey: ({ endpointId, eventId }) => `${eventId}\n${endpointId}`
})

/** Settings of the deliveries (defaults: 10 s, 1 h, 24 h, 10 s). */
export interface Options {
  /** The first wait after a failed attempt; each next one doubles. Default 10 s. */
  readonly baseDelay?: Duration.Input | undefined
  /** The longest wait between two attempts. Default 1 h. */
  readonly maxDelay?: Duration.Input | undefined
  /** How long after the first attempt a delivery is given up. Default 24 h. */
  readonly maxAge?: Duration.Input | undefined
  /** The longest wait for a receiver's answer. Default 10 s. */
  readonly timeout?: Duration.Input | undefined
}

const backoffOf = (options: Options): Backoff.Backoff => ({
  ...Backoff.defaults,
  ...(options.baseDelay === undefined ? {} : { baseDelay: Duration.fromInputUnsafe(options.baseDelay) }),
  ...(options.maxDelay === undefined ? {} : { maxDelay: Duration.fromInputUnsafe(options.maxDelay) }),
  ...(options.maxAge === undefined ? {} : { maxAge: Duration.fromInputUnsafe(options.maxAge) })
})

/** The body of the workflow: attempts, and durable waits between the failed ones, until accepted or given up. */
const makeRun = (attempt: ReturnType<typeof Attempts.make>, backoff: Backoff.Backoff) =>
  Effect.fnUntraced(function*(payload: typeof Payload.Type, executionId: string) {
    const attemptNumber = (n: number) =>
      Activity.make({ name: `${name}/attempt/${n}`, success: Attempts.Attempt, execute: attempt(payload, n) })
    const first = yield* attemptNumber(1)
    let last = first
    let n = 1
    while (last.failure !== undefined) {
      const wait = last.failure === "gone" ? undefined : Backoff.next(backoff, executionId, n, first.at, last.at)
      if (wait === undefined) {
        yield* Attempts.recordAbandoned(payload, n, last)
        return { delivered: false, attempts: n }
      }
      yield* DurableClock.sleep({ name: `${name}/backoff/${n}`, duration: Duration.millis(wait) })
      n++
      last = yield* attemptNumber(n)
    }
    return { delivered: true, attempts: n }
  })

/** Creates the owners' table when missing (the API creates it too, the same: `GatewayQuotes`). */
/**
 * Starts the deliveries of an outcome, if the gateway owns its quote: one per
 * endpoint of the key that POSTed it, without waiting for any (`discard`).
 * Never fails the quote: a failure to start is retried, then logged.
 */
const makeTrigger = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const keys = yield* ApiKeys.ApiKeys
  const engine = yield* WorkflowEngine
  yield* Owners.migrate(sql)
  return (outcome: QuoteWorkflow.Outcome): Effect.Effect<void> =>
    Effect.gen(function*() {
      const [owner] = yield* sql<{ readonly key_id: string }>`SELECT key_id FROM ${sql(ownersTable)}
        WHERE request_id = ${outcome.requestId}`
      if (owner === undefined) return
      const key = yield* keys.find(owner.key_id)
      if (Option.isNone(key)) return
      // those whose secret this node cannot open too: their deliveries wait for one that can
      const endpointIds = [
        ...key.value.webhooks.map((endpoint) => endpoint.id),
        ...(key.value.webhooksLeftOut ?? [])
      ]
      if (endpointIds.length === 0) return
      const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const event = eventOf(outcome, created)
      const body = JSON.stringify(event)
      yield* Effect.forEach(endpointIds, (endpointId) =>
        DeliveryWorkflow.execute(
          { eventId: event.id, endpointId, keyId: owner.key_id, body },
          // not a child of the quote: the quote neither waits for it nor is woken by it
          { discard: true, detached: true }
        ), { discard: true })
    }).pipe(
      Effect.provideService(WorkflowEngine, engine),
      Effect.retry({ times: 3, schedule: Schedule.exponential("200 millis") }),
      Effect.catchCause((cause) =>
        Effect.logError("the webhook deliveries of a quote could not be started", cause).pipe(
          Effect.annotateLogs({ requestId: outcome.requestId })
        )
      ),
      Effect.withSpan("WebhookDelivery.trigger", { attributes: { requestId: outcome.requestId } }, {
        captureStackTrace: false
      })
    )
})

/**
 * Registers `DeliveryWorkflow` with the engine in context, and provides
 * `QuoteWorkflow.QuoteOutcomes`: the publisher already in context, then the
 * start of the outcome's deliveries. Provide it to `QuoteWorkflow.layer` (the
 * `outcomes` of `Embedded.layerQuotes` and `Runner.layerQuotes`) on every node
 * that runs quotes, over the deployment's engine and database, with the API
 * keys and an `HttpClient` (no redirect is followed whatever the client).
 */
export const layer = (options: Options = {}): Layer.Layer<
  never, // `QuoteOutcomes` is a `Context.Reference`: provided, though not in the type
  SqlError.SqlError,
  WorkflowEngine | SqlClient.SqlClient | ApiKeys.ApiKeys | HttpClient.HttpClient
> =>
  Layer.effect(
    QuoteWorkflow.QuoteOutcomes,
    Effect.gen(function*() {
      const client = Attempts.deliveryClient(yield* HttpClient.HttpClient)
      const keys = yield* ApiKeys.ApiKeys
      const timeout = Duration.fromInputUnsafe(options.timeout ?? Duration.seconds(10))
      yield* Layer.build(DeliveryWorkflow.toLayer(makeRun(Attempts.make(client, keys, timeout), backoffOf(options))))
      const previous = yield* QuoteWorkflow.QuoteOutcomes
      const trigger = yield* makeTrigger
      return { publish: (outcome) => Effect.andThen(previous.publish(outcome), trigger(outcome)) }
    })
  )

/**
 * `layer` as `gcx serve` and `gcx runner` run it, deliveries sent with
 * gcx's undici client (`UndiciClient`), with the API keys of `keys`: by default `ApiKeys.layer` over the
 * deployment's database (the runners of a PostgreSQL); the embedded
 * `gcx serve` gives its keys' own file (`ApiKeys.layerFile`).
 */
export const layerNode = (
  options: Options = {},
  keys: Layer.Layer<
    ApiKeys.ApiKeys,
    SqlError.SqlError | CardCipher.UnsealError,
    SqlClient.SqlClient | CardCipher.CardCipher
  > = ApiKeys.layer
): Layer.Layer<
  never,
  SqlError.SqlError | CardCipher.UnsealError,
  WorkflowEngine | SqlClient.SqlClient | CardCipher.CardCipher
> => layer(options).pipe(Layer.provide(keys), Layer.provide(UndiciClient.layer))
