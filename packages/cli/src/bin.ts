/**
 * The `gcx` executable: `pnpm gcx ...`, or the package's bin (`bin/gcx.mjs`).
 * The process exits with the code `Cli.main` returns (see `ExitCode`).
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Cli from "./Cli.js"
import * as ExitCode from "./ExitCode.js"

Cli.main(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown: ExitCode.teardown })
)
