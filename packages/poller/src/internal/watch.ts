/**
 * What the polling engine keeps: a watch (one caller's set of transactions,
 * with its schedule, deadline and sink) and, per transaction in flight, a
 * small mutable record. A waiting transaction costs this record and its
 * schedule's step closure, not a fiber.
 */
import type { QuoteEvent } from "@gcx/core"
import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as PollSchedule from "../PollSchedule.js"
import * as Tracking from "./tracking.js"

/** A transaction to poll. */
export interface Target {
  readonly transactionId: string
  /** The service's `expectedCompletionTime`, when already known (from the POST or the journal). */
  readonly expectedCompletionTime?: number | undefined
}

/** How a watch polls. */
export interface WatchOptions {
  readonly schedule: PollSchedule.PollSchedule
  readonly deadlineMillis: number
}

/**
 * Where a watch's events go, besides the bus. `index` is the position of the
 * transaction among the watch's targets.
 */
export interface Sink {
  /** Every event of a transaction, in order, its terminal event last. */
  readonly emit: (index: number, event: QuoteEvent.QuoteEvent) => Effect.Effect<void>
  /**
   * A transaction is over: its terminal event (already emitted), or the defect
   * that ended it; or (index -1, interrupted) the engine stopped while the
   * watch was open.
   */
  readonly end: (index: number, exit: Exit.Exit<QuoteEvent.Terminal>) => Effect.Effect<void>
}

/** One caller's set of transactions. */
export interface Watch extends WatchOptions {
  readonly sink: Sink
  /**
   * The caller's context (its span, tracer, logger, log annotations, metric
   * attributes) with the engine's clock: each GET runs with it.
   */
  readonly context: Context.Context<never>
  readonly inFlight: Set<Fiber.Fiber<unknown, unknown>>
  open: boolean
}

/** One transaction in flight: everything the engine remembers of it between two GETs. */
export interface Entry {
  readonly watch: Watch
  readonly index: number
  readonly transactionId: string
  readonly deadline: number
  due: number
  /** This transaction's schedule, with its state in the closure. */
  readonly step: PollSchedule.Step
  polls: number
  /** Requests that failed since the last answer that could be used (the client's retries included). */
  failedRequests: number
  unexpectedInARow: number
  /** GETs in a row that ended in `Unauthorized`: the client's one 401 recovery failed each time. */
  unauthorizedInARow: number
  tracking: Tracking.Tracking
  /** The latest `expectedCompletionTime` the service gave. */
  hint: number | undefined
}

/** The record of `target`, the `index`-th of `watch`, before its first GET. */
export const makeEntry = (
  watch: Watch,
  index: number,
  target: Target,
  deadline: number,
  step: PollSchedule.Step
): Entry => ({
  watch,
  index,
  transactionId: target.transactionId,
  deadline,
  due: 0,
  step,
  polls: 0,
  failedRequests: 0,
  unexpectedInARow: 0,
  unauthorizedInARow: 0,
  tracking: Tracking.initial(target.transactionId),
  hint: target.expectedCompletionTime
})
