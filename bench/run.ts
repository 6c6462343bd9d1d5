/**
 * `pnpm bench [--quick] [--only <row,...>]`: the benchmarks of gcx, each row
 * measured side by side with its baseline in one run, on loopback, with the
 * sandbox in a separate process. Prints a markdown table and writes
 * `bench/results/latest.json` (machine, every row's raw figures, ratios,
 * goals and pass/fail).
 *
 * `--quick` (what CI runs) uses small counts and does not enforce the goals;
 * a full run exits 1 when a goal fails.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as os from "node:os"
import * as Machine from "./internal/machine.js"
import type { RowContext, RowResult } from "./internal/report.js"
import * as Report from "./internal/report.js"
import { round } from "./internal/stats.js"
import * as Batch from "./rows/batch.js"
import * as Durable from "./rows/durable.js"
import * as Gateway from "./rows/gateway.js"
import * as Memory from "./rows/memory.js"
import * as Polling from "./rows/polling.js"
import * as Sandbox from "./rows/sandbox.js"
import * as Soak from "./rows/soak.js"
import * as Startup from "./rows/startup.js"
import * as Throughput from "./rows/throughput.js"
import * as Token from "./rows/token.js"

const rows: ReadonlyArray<readonly [string, (context: RowContext) => Effect.Effect<RowResult, Error>]> = [
  ["throughput", Throughput.run],
  ["token", Token.run],
  ["polling", Polling.run],
  ["memory", Memory.run],
  ["sandbox", Sandbox.run],
  ["durable", Durable.run],
  ["startup", Startup.run],
  ["batch", Batch.run],
  ["gateway", Gateway.run],
  ["soak", Soak.run]
]

const args = process.argv.slice(2).filter((arg) => arg !== "--")
const quick = args.includes("--quick")
const onlyIndex = args.indexOf("--only")
const only = onlyIndex >= 0 ? (args[onlyIndex + 1] ?? "").split(",") : undefined

const main = Effect.gen(function*() {
  const started = performance.now()
  const machine = Machine.describe()
  const context: RowContext = { quick, log: (message) => console.log(`  ${message}`) }
  console.log(`gcx bench (${quick ? "quick" : "full"}) on ${Machine.oneLine(machine)}`)
  const results: Array<RowResult> = []
  for (const [id, row] of rows) {
    if (only !== undefined && !only.includes(id)) continue
    console.log(`${id}…`)
    const result = yield* row(context)
    console.log(`${id}: done in ${result.seconds} s`)
    results.push(result)
  }
  const table = Report.table(results)
  const goals = results.flatMap((row) => row.goals.map((goal) => ({ ...goal, row: row.id })))
  const file = Report.write({
    version: 1,
    mode: quick ? "quick" : "full",
    date: new Date().toISOString(),
    seconds: round((performance.now() - started) / 1000, 1),
    machine,
    loadAverageAtEnd: os.loadavg().map((load) => round(load, 2)),
    command: `pnpm bench${args.length === 0 ? "" : ` ${args.join(" ")}`}`,
    goalsEnforced: !quick,
    rows: Object.fromEntries(results.map(({ lines: _, ...row }) => [row.id, row])),
    goals,
    table
  })
  console.log("")
  console.log(table)
  for (const row of results) {
    for (const note of row.notes) console.log(`- ${row.title}: ${note}`)
  }
  console.log("")
  console.log(`Machine: ${Machine.oneLine(machine)}. Total ${round((performance.now() - started) / 1000, 1)} s.`)
  console.log(`Results: ${file}`)
  const failed = goals.filter((goal) => !goal.pass)
  if (failed.length > 0) {
    console.log(`${quick ? "Not enforced (--quick)" : "Goals failed"}: ${failed.map((goal) => goal.id).join(", ")}`)
    if (!quick) process.exitCode = 1
  }
})

NodeRuntime.runMain(main)
