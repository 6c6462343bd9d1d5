/**
 * `gcx batch <file> [--concurrency N] [--out results.jsonl] [--json] [--metrics-port P]`: quotes
 * every card of a CSV or JSON-lines file (`run/Batch`, loaded when the command runs).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Durable from "../Durable.js"
import * as Flag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as Polling from "../Polling.js"

/** The argument and flags of `gcx batch`. */
export const options = {
  file: Args.file({ name: "file", exists: "yes" }).pipe(
    Args.withDescription("CSV (header cardNumber,pinNumber,productLineId) or JSON lines with those fields")
  ),
  concurrency: Flag.number("concurrency", "n", { integer: true, min: 1 }).pipe(
    Options.withDescription("how many cards are quoted at a time (default 4)"),
    Options.withDefault(4)
  ),
  out: Options.file("out").pipe(
    Options.withPseudoName("results.jsonl"),
    Options.withDescription(
      "results file, one JSON line per card, written whole each time; re-running with it skips finished cards, " +
        "wherever their rows are now. Its key file <out>.key (or GCX_BATCH_KEY) must stay with it. " +
        "Refused: the batch file itself, or an existing file that is not a gcx results file"
    ),
    Options.optional
  ),
  json: Options.boolean("json").pipe(
    Options.withDescription("print each card's result line on stdout instead of the progress display")
  ),
  metricsPort: Flag.number("metrics-port", "port", { integer: true, min: 1, max: 65_535 }).pipe(
    Options.withDescription("serve Prometheus metrics at http://127.0.0.1:<port>/metrics while the batch runs"),
    Options.optional
  ),
  ...Polling.options,
  durable: Durable.flag,
  connection: ConnectionFlags.options
}

/** The parsed argument and flags of `gcx batch`. */
export type Flags = Command.Command.ParseConfig<typeof options>

/** The `batch` command. */
export const command = Command.make("batch", options, Lazy.handler(() => import("../run/Batch.js"))).pipe(
  Command.withDescription(
    Help.describe("Quote every card of a CSV or JSON-lines file", [
      ...Help.connectionVariables,
      ["GCX_BATCH_KEY", "key of the results file's card fingerprints, 32 characters or more (default: <out>.key, 0600)"]
    ])
  )
)
