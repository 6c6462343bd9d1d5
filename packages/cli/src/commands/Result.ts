/**
 * `gcx result <requestId> [--wait [--timeout s]] [--json]`: the outcome of a durable quote, as `gcx quote`
 * shows it (`run/Result`, loaded when the command runs). Embedded on `GCX_DATABASE_FILE`, or
 * client-only on the runners of `GCX_DATABASE_URL`, as `--durable`.
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as GcxFlag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

/** How long `--wait` waits unless told, in seconds. */
export const defaultTimeout = 300

/** The argument and flags of `gcx result`. */
export const options = {
  wait: Flag.Boolean("wait").pipe(
    Flag.withDescription("wait for the outcome of a quote still running (at most --timeout)"),
    Flag.withDefault(false)
  ),
  timeout: GcxFlag.number("timeout", "seconds", { min: 0, above: true }).pipe(
    Flag.withDescription(`how long --wait waits, in seconds (default ${defaultTimeout})`),
    Flag.withDefault(defaultTimeout)
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDescription("print the outcome as one JSON event"),
    Flag.withDefault(false)
  ),
  connection: ConnectionFlags.options,
  requestId: Argument.String("requestId").pipe(
    Argument.withDescription("the durable quote's requestId, as an interrupted gcx quote --durable printed it")
  )
}

/** The parsed argument and flags of `gcx result`. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `result` command. */
export const command = Command.make("result", options, Lazy.handler(() => import("../run/Result.js"))).pipe(
  Help.describe(
    "Print the outcome of a durable quote (gcx quote --durable) by its requestId; with --wait, wait for it. " +
      "A quote still running exits 5; an unknown requestId exits 2",
    [...Help.durableFlagVariables, ...Help.connectionVariables]
  ),
  Command.withShortDescription("Print the outcome of a durable quote")
)
