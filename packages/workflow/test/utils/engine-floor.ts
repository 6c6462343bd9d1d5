/**
 * The engine's floor, for bench row 6: a workflow whose one activity does
 * nothing, on the same deployment as the quotes. What it costs per execution
 * is what `effect/workflow` and `effect/cluster` cost for the shape of an
 * instant quote (the `run` request, one activity request, their replies and
 * storage), without the POST, the submit counter, the card cipher or any gcx
 * schema: the part of a durable quote that gcx cannot cut.
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Activity from "effect/workflow/Activity"
import * as Workflow from "effect/workflow/Workflow"
import type { WorkflowEngine } from "effect/workflow/WorkflowEngine"

/** A workflow keyed by its `id`, with one activity that does nothing. */
export const FloorWorkflow = Workflow.make("GcxEngineFloor", {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: ({ id }) => id
})

const noop = Activity.make({ name: "GcxEngineFloor/noop", success: Schema.String, execute: Effect.succeed("done") })

/** Registers `FloorWorkflow` with the engine in context. */
export const layer: Layer.Layer<never, never, WorkflowEngine> = FloorWorkflow.toLayer(() => noop)

/** Runs one execution of the floor workflow under a fresh id. */
export const execute = (id: string): Effect.Effect<string, never, WorkflowEngine> => FloorWorkflow.execute({ id })
