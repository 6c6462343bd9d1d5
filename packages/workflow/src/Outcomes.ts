/**
 * Terminal outcomes across nodes: every runner announces the end of each workflow it runs (keyed
 * by a `requestId` payload field) with PostgreSQL's `NOTIFY` (`PgClient.notify` of `@effect/sql-pg`,
 * which sends `pg_notify`), and any node follows them with `LISTEN` (`PgClient.listen`). The announcement
 * comes from the engine itself (`layerPublisher` decorates the `WorkflowEngine` a deployment
 * provides), so it needs nothing from the workflow.
 *
 * Delivery is at least once to the listeners connected at the time: a runner that dies after the
 * outcome is stored but before the notification replays the workflow elsewhere, which announces it
 * again (subscribers key outcomes by requestId). A listener that was not connected misses it: the
 * durable answer is `result(requestId)`.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as SqlError from "effect/sql/SqlError"
import * as Stream from "effect/Stream"
import * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as PgClient from "./internal/pg/PgClient.js"

/** The PostgreSQL channel of the announcements. */
export const channel = "gcx_quote_outcomes"

/** A workflow ended with its success value. */
export class Completed extends Schema.TaggedClass<Completed>()("Completed", {
  requestId: Schema.String,
  /** The workflow that ended: for a quote, match it with the one recorded for the requestId (`RequestIds.lookup`). */
  executionId: Schema.optional(Schema.String),
  transactionId: Schema.String,
  workflow: Schema.String,
  /** The success value, encoded with the workflow's success schema. */
  value: Schema.Unknown
}) {}

/** A workflow ended with a typed error. */
export class Failed extends Schema.TaggedClass<Failed>()("Failed", {
  requestId: Schema.String,
  /** The workflow that ended: for a quote, match it with the one recorded for the requestId (`RequestIds.lookup`). */
  executionId: Schema.optional(Schema.String),
  /** Absent when the quote failed before the service created a transaction. */
  transactionId: Schema.optional(Schema.String),
  workflow: Schema.String,
  /** The error's tag, e.g. `InvalidCard`. */
  errorTag: Schema.String,
  /** The error, encoded with the workflow's error schema. */
  error: Schema.Unknown
}) {}

/** A terminal outcome as announced. */
export const Outcome = Schema.Union([Completed, Failed])

/** A terminal outcome as announced. */
export type Outcome = typeof Outcome.Type

const OutcomeJson = Schema.fromJsonString(Outcome)
const encodeOutcome = Schema.encodeEffect(OutcomeJson)
/** A `Filter` for `Stream.filterMap`: the outcome of a message, or why it is not one. */
const decodeOutcome = Schema.decodeUnknownResult(OutcomeJson)

const field = (value: unknown, name: string): string | undefined => {
  const found = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined
  return typeof found === "string" ? found : undefined
}

/** The outcome of a finished run, if the workflow has a requestId and ended in success or a typed error. */
const outcomeOf = (
  workflow: {
    readonly _tag: string
    readonly successSchema: Schema.Top
    readonly errorSchema: Schema.Top
  },
  payload: unknown,
  executionId: string,
  exit: Exit.Exit<unknown, unknown>
): Effect.Effect<Option.Option<Outcome>> => {
  const requestId = field(payload, "requestId")
  if (requestId === undefined) return Effect.succeedNone
  if (Exit.isSuccess(exit)) {
    return Schema.encodeUnknownEffect(workflow.successSchema as Schema.Codec<unknown>)(exit.value).pipe(
      Effect.map((value) =>
        Option.some(
          new Completed({
            requestId,
            executionId,
            transactionId: field(exit.value, "transactionId") ?? "",
            workflow: workflow._tag,
            value
          })
        )
      ),
      Effect.orElseSucceed(() => Option.none())
    )
  }
  const failure = Cause.findErrorOption(exit.cause)
  if (Option.isNone(failure)) return Effect.succeedNone // interrupted (suspended) or a defect: no outcome yet
  return Schema.encodeUnknownEffect(workflow.errorSchema as Schema.Codec<unknown>)(failure.value).pipe(
    Effect.map((error) => {
      const transactionId = field(failure.value, "transactionId")
      return Option.some(
        new Failed({
          requestId,
          executionId,
          workflow: workflow._tag,
          errorTag: field(failure.value, "_tag") ?? "Unknown",
          error,
          ...(transactionId === undefined ? {} : { transactionId })
        })
      )
    }),
    Effect.orElseSucceed(() => Option.none())
  )
}

/** Announces one outcome; a failure to announce is logged and never fails the workflow. */
const announce = (pg: PgClient.PgClient, outcome: Outcome) =>
  encodeOutcome(outcome).pipe(
    Effect.flatMap((payload) => pg.notify(channel, payload)),
    Effect.timeout("5 seconds"),
    Effect.catchCause((cause) =>
      Effect.logWarning("could not announce a quote outcome", cause).pipe(
        Effect.annotateLogs({ requestId: outcome.requestId })
      )
    )
  )

/** Decorates an engine: every workflow it registers announces its terminal outcome on `channel`. */
export const decorate = (engine: WorkflowEngine.WorkflowEngine["Service"], pg: PgClient.PgClient) =>
  WorkflowEngine.WorkflowEngine.of({
    ...engine,
    register: (workflow, execute) =>
      engine.register(workflow, (payload, executionId) =>
        execute(payload, executionId).pipe(
          Effect.onExit((exit) =>
            outcomeOf(workflow, payload, executionId, exit).pipe(
              Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (outcome) => announce(pg, outcome) }))
            )
          )
        ))
  })

/** The deployment's engine, decorated to announce outcomes; for runners. */
export const layerPublisher: Layer.Layer<
  WorkflowEngine.WorkflowEngine,
  never,
  WorkflowEngine.WorkflowEngine | PgClient.PgClient
> = Layer.effect(
  WorkflowEngine.WorkflowEngine,
  Effect.zipWith(WorkflowEngine.WorkflowEngine, PgClient.PgClient, decorate)
)

/** Follows the terminal outcomes announced by every runner. */
export class Outcomes extends Context.Service<Outcomes, {
  /**
   * Every outcome announced from now on, by any runner (at least once; malformed messages are
   * skipped). The stream starts once PostgreSQL has confirmed its `LISTEN`.
   */
  readonly subscribe: Stream.Stream<Outcome, SqlError.SqlError>
}>()("@gcx/workflow/Outcomes") {}

/** `Outcomes` over `LISTEN` on the deployment's PostgreSQL. */
export const layer: Layer.Layer<Outcomes, never, PgClient.PgClient> = Layer.effect(
  Outcomes,
  PgClient.PgClient.useSync((pg) =>
    Outcomes.of({
      subscribe: Stream.unwrap(Effect.map(pg.listen(channel), Stream.fromQueue)).pipe(
        Stream.filterMap((notification) => decodeOutcome(notification.payload))
      )
    })
  )
)
