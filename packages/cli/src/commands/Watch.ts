/**
 * `gcx watch <transactionId> [--json]`: resumes tracking one transaction
 * (`run/Watch`, loaded when the command runs).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as Polling from "../Polling.js"

/** The argument and flags of `gcx watch`. */
export const options = {
  transactionId: Args.text({ name: "transactionId" }).pipe(
    Args.withDescription("the transaction to follow, as `gcx quote` printed it")
  ),
  json: Options.boolean("json").pipe(Options.withDescription("print one JSON event per line")),
  ...Polling.options,
  connection: ConnectionFlags.options
}

/** The parsed argument and flags of `gcx watch`. */
export type Flags = Command.Command.ParseConfig<typeof options>

/** The `watch` command. */
export const command = Command.make("watch", options, Lazy.handler(() => import("../run/Watch.js"))).pipe(
  Command.withDescription(Help.describe("Resume tracking one transaction", Help.connectionVariables))
)
