/**
 * The events of durable quotes, kept in the deployment's database by the node
 * that runs each quote, in order, each with its sequence number within its
 * quote: what lets any node (a gateway behind a load balancer) show a quote's
 * progress, and resume a dropped event stream without a gap or a repeat.
 *
 * CONTRACT (lead, 2026-11-25): the service's shape is fixed; the
 * implementation (the writer on runners, the table, the reader) belongs to
 * the events engineer.
 */
import type * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as SqlError from "effect/sql/SqlError"
import type * as Stream from "effect/Stream"

/** An event of a quote and its sequence number within the quote (1, 2, …). */
export interface Entry {
  readonly seq: number
  readonly event: QuoteEvent.QuoteEvent
}

/** The event log service. */
export interface Service {
  /** The events of quote `requestId` recorded so far after `afterSeq` (0: all), in order. */
  readonly read: (requestId: string, afterSeq: number) => Effect.Effect<ReadonlyArray<Entry>, SqlError.SqlError>
  /**
   * The events of quote `requestId` after `afterSeq`: those recorded, then
   * each as it is recorded, in order, none twice; ends after the terminal one.
   */
  readonly follow: (requestId: string, afterSeq: number) => Stream.Stream<Entry, SqlError.SqlError>
}

/** The event log service. */
export class EventLog extends Context.Service<EventLog, Service>()("@gcx/workflow/EventLog") {}
