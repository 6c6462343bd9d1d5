/**
 * `gcx quote --card N --pin P --product ID [--json]`: submits one quote and
 * follows it to its end (`run/Quote`, loaded when the command runs).
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Durable from "../Durable.js"
import * as GcxFlag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as Polling from "../Polling.js"

/** The flags of `gcx quote`. */
export const options = {
  card: Flag.Redacted("card").pipe(
    Flag.withMetavar("number"),
    Flag.withDescription("card number (shown masked, never in full)")
  ),
  pin: Flag.Redacted("pin").pipe(Flag.withMetavar("pin"), Flag.withDescription("card PIN (never shown)")),
  product: Flag.String("product").pipe(
    Flag.withMetavar("id"),
    Flag.withDescription("product line id (merchant), e.g. 1000")
  ),
  requestId: Flag.String("request-id").pipe(
    Flag.withMetavar("id"),
    Flag.withDescription(
      "the quote's requestId (idempotency key); one card's alone. Default: fresh; with --durable, " +
        "that of the card's unfinished quote (an interrupted run resumes, no second POST)"
    ),
    Flag.optional
  ),
  previousAttempts: GcxFlag.number("previous-attempts", "n", { integer: true, min: 0 }).pipe(
    Flag.withDescription(
      "attempts of --request-id made before: resumes a POST refused after its retries (its error line gives both)"
    ),
    Flag.optional
  ),
  json: Flag.Boolean("json").pipe(Flag.withDescription("print one JSON event per line"), Flag.withDefault(false)),
  ...Polling.options,
  durable: Durable.flag,
  connection: ConnectionFlags.options
}

/** The parsed flags of `gcx quote`. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `quote` command. */
export const command = Command.make("quote", options, Lazy.handler(() => import("../run/Quote.js"))).pipe(
  Help.describe("Quote one card and follow its progress", [...Help.connectionVariables, ...Help.durableFlagVariables])
)
