/**
 * `gcx heartbeat [--json]`: checks that the service can be reached with the
 * configured credentials (`run/Heartbeat`, loaded when the command runs).
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

/** The flags of `gcx heartbeat`. */
export const options = {
  json: Flag.Boolean("json").pipe(Flag.withDescription("print the answer as one JSON object"), Flag.withDefault(false)),
  connection: ConnectionFlags.options
}

/** The parsed flags of `gcx heartbeat`. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `heartbeat` command. */
export const command = Command.make("heartbeat", options, Lazy.handler(() => import("../run/Heartbeat.js"))).pipe(
  Help.describe("Check that the service can be reached with the configured credentials", Help.connectionVariables),
  Command.withShortDescription("Check that the service answers, with the configured credentials")
)
