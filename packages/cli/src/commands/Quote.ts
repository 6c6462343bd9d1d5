/**
 * `gcx quote --card N --pin P --product ID [--json]`: submits one quote and
 * follows it to its end (`run/Quote`, loaded when the command runs).
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Durable from "../Durable.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as Polling from "../Polling.js"

/** The flags of `gcx quote`. */
export const options = {
  card: Options.redacted("card").pipe(
    Options.withPseudoName("number"),
    Options.withDescription("card number (shown masked, never in full)")
  ),
  pin: Options.redacted("pin").pipe(Options.withPseudoName("pin"), Options.withDescription("card PIN (never shown)")),
  product: Options.text("product").pipe(
    Options.withPseudoName("id"),
    Options.withDescription("product line id (merchant), e.g. 1000")
  ),
  json: Options.boolean("json").pipe(Options.withDescription("print one JSON event per line")),
  ...Polling.options,
  durable: Durable.flag,
  connection: ConnectionFlags.options
}

/** The parsed flags of `gcx quote`. */
export type Flags = Command.Command.ParseConfig<typeof options>

/** The `quote` command. */
export const command = Command.make("quote", options, Lazy.handler(() => import("../run/Quote.js"))).pipe(
  Command.withDescription(Help.describe("Quote one card and follow its progress", Help.connectionVariables))
)
