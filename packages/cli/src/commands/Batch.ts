/**
 * `gcx batch <file> [--concurrency N] [--out results.jsonl] [--json] [--metrics-port P]`: quotes
 * every card of a CSV or JSON-lines file (`run/Batch`, loaded when the command runs).
 */
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ConnectionFlags from "../ConnectionFlags.js"
import * as Durable from "../Durable.js"
import * as GcxFlag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"
import * as Polling from "../Polling.js"

/** The argument and flags of `gcx batch`. */
export const options = {
  concurrency: GcxFlag.number("concurrency", "n", { integer: true, min: 1 }).pipe(
    Flag.withDescription("how many cards are quoted at a time (default 4)"),
    Flag.withDefault(4)
  ),
  out: Flag.String("out").pipe(
    Flag.withMetavar("results.jsonl"),
    Flag.withDescription(
      "results file, one JSON line per card, written whole each time; re-running with it skips finished cards, " +
        "wherever their rows are now. Its key file <out>.key (or GCX_BATCH_KEY) must stay with it. " +
        "Refused: the batch file itself, or an existing file that is not a gcx results file"
    ),
    Flag.mapEffect(GcxFlag.writableFile("out")),
    Flag.optional
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDescription("print each card's result line on stdout instead of the progress display"),
    Flag.withDefault(false)
  ),
  metricsPort: GcxFlag.number("metrics-port", "port", { integer: true, min: 1, max: 65_535 }).pipe(
    Flag.withDescription("serve Prometheus metrics at http://127.0.0.1:<port>/metrics while the batch runs"),
    Flag.optional
  ),
  ...Polling.options,
  durable: Durable.flag,
  connection: ConnectionFlags.options,
  // after the flags: a bad flag is reported before a missing file
  file: GcxFlag.existingFile("file").pipe(
    Argument.withDescription("CSV (header cardNumber,pinNumber,productLineId) or JSON lines with those fields")
  )
}

/** The parsed argument and flags of `gcx batch`. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `batch` command. */
export const command = Command.make("batch", options, Lazy.handler(() => import("../run/Batch.js"))).pipe(
  Help.describe("Quote every card of a CSV or JSON-lines file", [
    ...Help.connectionVariables,
    ["GCX_BATCH_KEY", "key of the results file's card fingerprints, 32 characters or more (default: <out>.key, 0600)"],
    ...Help.durableFlagVariables
  ])
)
