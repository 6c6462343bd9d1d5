/**
 * `gcx watch <transactionId> [--json]`: resumes tracking one transaction
 * (`run/Watch`, loaded when the command runs).
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as Polling from "../Polling.js"

/** The argument and flags of `gcx watch`. */
export const options = {
  transactionId: Argument.String("transactionId").pipe(
    Argument.withDescription("the transaction to follow, as `gcx quote` printed it")
  ),
  json: Flag.Boolean("json").pipe(Flag.withDescription("print one JSON event per line"), Flag.withDefault(false)),
  ...Polling.options,
  connection: ConnectionFlags.options
}

/** The parsed argument and flags of `gcx watch`. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `watch` command. */
export const command = Command.make("watch", options, Lazy.handler(() => import("../run/Watch.js"))).pipe(
  Help.describe("Resume tracking one transaction", Help.connectionVariables)
)
