/**
 * Row 7's floor: the smallest `effect/cli` program, one command with one flag and a version,
 * run on Node as the `gcx` bin runs (`@effect/platform-node`'s services and `runMain`). The row
 * bundles it with the CLI's own esbuild options (`scripts/bundle-cli.ts`) and starts it with
 * Node's compile cache, as `bin/gcx.mjs` does: what any Effect CLI pays to answer `--version`.
 *
 * Usage: node <bundle>/cli.mjs --version
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"

const command = Command.make("floor", { verbose: Flag.Boolean("verbose") }, () => Effect.void)

Command.runWith(command, { version: "0.1.0" })(process.argv.slice(2)).pipe(
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
