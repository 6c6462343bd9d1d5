/**
 * Row 9's deployment in a process of its own (`internal/sideProcess.ts`):
 * `gcx serve` embedded as `internal/gatewayDeployment.ts` composes it, on a
 * SQLite file and a port of the parent's, with an API key created at start.
 * Both of the row's sides run on it: `DurableQuotes.execute` called here, and
 * quotes through the gateway from the parent's callers. Its own V8 heap and
 * JIT, as in a `gcx serve` process: nothing of the bench's other rows.
 *
 * Commands, one per line:
 * - `target`: the gateway's `{"baseUrl","key"}`;
 * - `run <quotes>`: quotes at the side's concurrency through `DurableQuotes.execute`,
 *   answering `{"wallMillis","cpuMillis","failures"}` (this process's CPU);
 * - `cpu`: this process's CPU milliseconds so far (`{"cpuMillis"}`), which the
 *   parent reads before and after a run of its callers through the gateway.
 * Exits when stdin closes, after the deployment is released.
 *
 * Usage: node --import tsx bench/rows/gateway-side.ts <options json>
 */
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Cpu from "../internal/cpu.js"
import { failuresOf } from "../internal/durableSides.js"
import * as GatewayDeployment from "../internal/gatewayDeployment.js"
import type { Target } from "../internal/gatewayHttp.js"
import { instantCard } from "../internal/gcx.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import { measureRun, serve } from "../internal/sideProcess.js"

/** Where the side's deployment runs, and how many quotes `run` has in flight. */
export interface GatewaySideOptions {
  readonly endpoint: Endpoint
  readonly filename: string
  readonly port: number
  readonly dataKey: string
  readonly concurrency: number
}

const main = () => {
  const options = JSON.parse(process.argv[2]!) as GatewaySideOptions
  const runtime = ManagedRuntime.make(GatewayDeployment.layer(options))
  // built at the first `target` (a deployment that fails to start fails that command, in order)
  const target = () =>
    runtime.runPromise(
      Effect.map(
        GatewayDeployment.createCaller("bench"),
        (caller): Target => ({ baseUrl: GatewayDeployment.baseUrl(options.port), key: caller.key })
      )
    )
  const execute = () => Effect.flatMap(DurableQuotes.DurableQuotes, (durable) => durable.execute(instantCard))
  const run = (quotes: number) => runtime.runPromise(failuresOf(quotes, options.concurrency, execute))
  serve(async (line) => {
    const [command, count] = line.split(" ")
    switch (command) {
      case "target":
        return target()
      case "run":
        return measureRun(() => run(Number(count)))
      case "cpu":
        return { cpuMillis: Cpu.selfMillis() }
      default:
        throw new Error(`unknown command: ${line}`)
    }
  }, () => runtime.dispose())
}

if (process.argv[1]?.endsWith("gateway-side.ts")) main()
