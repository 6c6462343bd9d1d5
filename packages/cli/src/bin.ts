/**
 * The `gcx` executable: `pnpm gcx ...`, or the package's bin (`bin/gcx.mjs`).
 * The process exits with the code `Cli.main` returns (see `ExitCode`); a
 * closed stdout does not change it (`Output.survivePipeClose`).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Cli from "./Cli.js"
import * as ExitCode from "./ExitCode.js"
import * as Lazy from "./Lazy.js"
import * as Output from "./Output.js"

// a reader that goes away (`gcx ... | head -1`) ends the output, not the command
Output.survivePipeClose()
// a clean Ctrl-C shows no warning of the cluster's shutdown
Output.watchShutdown()

Cli.main(process.argv).pipe(
  Effect.provide(Lazy.layerNodeServices),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown: ExitCode.teardown })
)
