/**
 * The messages of the dashboard's event stream (`GET /__sandbox/events`): a
 * snapshot, then deltas. `Api` re-exports them.
 */
import { Transaction, Wire } from "@gcx/core"
import * as Schema from "effect/Schema"
import { FaultRule } from "./Faults.js"
import { Entry, RequestCounts } from "./Journal.js"
import { Summary } from "./Lifecycle.js"

/** A transaction as the dashboard shows it: its summary and its steps. */
export const DashboardTransaction = Schema.Struct({
  ...Summary.fields,
  steps: Schema.Array(Transaction.Step)
}).annotate({ identifier: "DashboardTransaction" })

/** A partner as the dashboard shows it. */
export const DashboardPartner = Schema.Struct({ clientId: Schema.String, enabled: Schema.Boolean })

/** The first message of the dashboard's event stream: the latest transactions and requests, newest first. */
export const DashboardSnapshot = Schema.Struct({
  time: Wire.Timestamp,
  requests: RequestCounts,
  transactions: Schema.Array(DashboardTransaction),
  journal: Schema.Array(Entry),
  faults: Schema.Array(FaultRule),
  partners: Schema.Array(DashboardPartner)
}).annotate({ identifier: "DashboardSnapshot" })

/**
 * A later message of the dashboard's event stream: what changed since the
 * stream's previous message. A part that did not change is absent; a delta
 * with the time only is a keep-alive.
 */
export const DashboardDelta = Schema.Struct({
  time: Wire.Timestamp,
  requests: Schema.optionalKey(RequestCounts),
  /** The transactions among the latest that are new to the stream or changed (state, progress, steps). */
  transactions: Schema.optionalKey(Schema.Array(DashboardTransaction)),
  /** The ids of the latest transactions, newest first, when they are not those of the previous message. */
  transactionIds: Schema.optionalKey(Schema.Array(Schema.String)),
  /** The requests journaled since the previous message, newest first. */
  journal: Schema.optionalKey(Schema.Array(Entry)),
  faults: Schema.optionalKey(Schema.Array(FaultRule)),
  partners: Schema.optionalKey(Schema.Array(DashboardPartner))
}).annotate({ identifier: "DashboardDelta" })
