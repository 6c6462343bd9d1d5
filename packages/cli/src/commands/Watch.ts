/**
 * `gcx watch <transactionId> [--json]`: resumes tracking one transaction,
 * for instance one whose `gcx quote` was interrupted, and shows it as
 * `gcx quote` does.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type * as Terminal from "@effect/platform/Terminal"
import type * as Errors from "@gcx/core/Errors"
import type * as Quote from "@gcx/core/Quote"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Effect from "effect/Effect"
import * as Connection from "../Connection.js"
import * as Help from "../Help.js"
import * as Polling from "../Polling.js"
import * as Reachability from "../Reachability.js"
import { follow } from "./Quote.js"

/** Tracks a transaction to its end; fails with its error. */
export const run = (
  transactionId: string,
  options: Polling.Flags & { readonly json: boolean }
): Effect.Effect<Quote.CompletedQuote, Errors.QuoteFailure, QuotePoller.QuotePoller | Terminal.Terminal> =>
  Effect.flatMap(
    QuotePoller.QuotePoller,
    (poller) => follow((mode) => poller.track(transactionId, Polling.trackOptions(options, mode)), options.json)
  )

/** The `watch` command. */
export const command = Command.make(
  "watch",
  {
    transactionId: Args.text({ name: "transactionId" }).pipe(
      Args.withDescription("the transaction to follow, as `gcx quote` printed it")
    ),
    json: Options.boolean("json").pipe(Options.withDescription("print one JSON event per line")),
    ...Polling.options,
    connection: Connection.options
  },
  ({ connection, transactionId, ...options }) =>
    run(transactionId, options).pipe(Reachability.explain, Effect.provide(Connection.pollerLayer(connection)))
).pipe(Command.withDescription(Help.describe("Resume tracking one transaction", Help.connectionVariables)))
