/**
 * The `gcx` executable: `pnpm gcx ...`, or the package's bin (`bin/gcx.mjs`).
 * The process exits with the code `Cli.main` returns (see `ExitCode`); a
 * closed stdout does not change it (`Output.survivePipeClose`).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Cli from "./Cli.js"
import * as ExitCode from "./ExitCode.js"
import * as Output from "./Output.js"

// a reader that goes away (`gcx ... | head -1`) ends the output, not the command
Output.survivePipeClose()

// what @effect/cli needs (`CliApp.Environment`); `NodeContext.layer` would also load a command
// executor and a worker manager, which gcx never uses, at every start
const environment = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)

Cli.main(process.argv).pipe(
  Effect.provide(environment),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true, teardown: ExitCode.teardown })
)
