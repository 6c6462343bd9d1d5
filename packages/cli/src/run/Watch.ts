/**
 * `gcx watch <transactionId> [--json]`: resumes tracking one transaction,
 * for instance one whose `gcx quote` was interrupted, and shows it as
 * `gcx quote` does. Its flags are in `commands/Watch`.
 */
import type * as Errors from "@gcx/core/Errors"
import type * as Quote from "@gcx/core/Quote"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Effect from "effect/Effect"
import type * as Stdio from "effect/Stdio"
import type * as Terminal from "effect/Terminal"
import * as Connection from "../Connection.js"
import * as Polling from "../Polling.js"
import * as Reachability from "../Reachability.js"
import { follow } from "./Quote.js"

/** Tracks a transaction to its end; fails with its error. */
export const run = (
  transactionId: string,
  options: Polling.Flags & { readonly json: boolean }
): Effect.Effect<
  Quote.CompletedQuote,
  Errors.QuoteFailure,
  QuotePoller.QuotePoller | Terminal.Terminal | Stdio.Stdio
> =>
  Effect.flatMap(
    QuotePoller.QuotePoller,
    (poller) => follow((mode) => poller.track(transactionId, Polling.trackOptions(options, mode)), options.json)
  )

/** What `gcx watch` is given: its argument and flags (`commands/Watch`). */
export interface Flags extends Polling.Flags {
  readonly transactionId: string
  readonly json: boolean
  readonly connection: Connection.Flags
}

/** The `watch` command's handler: the transaction of the flags, on the connection they give. */
export const handler = ({ connection, transactionId, ...options }: Flags) =>
  run(transactionId, options).pipe(Reachability.explain, Effect.provide(Connection.pollerLayer(connection)))
