/**
 * Row 6, start-up: `gcx --version` of the installed bin (built, packed and installed with npm
 * into an application outside the workspace, as a user gets it), beside `node -e 0`, the floor
 * any Node program pays. Starts alternate between the two, after one warm-up start of each (the
 * file cache); the medians are reported. The installed application is reused while the
 * tarballs are the same (`scripts/install/App.ts`).
 */
import * as Effect from "effect/Effect"
import * as App from "../../scripts/install/App.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import { median, round } from "../internal/stats.js"

/** The goal: the installed `gcx --version` in at most this many milliseconds. */
const goalMillis = 300

/** Wall-clock milliseconds of one process start, to its exit (which must be 0). */
const timeStart = (command: string, args: ReadonlyArray<string>, cwd: string): number => {
  const result = App.run(command, args, { cwd, timeout: 30_000 })
  if (result.code !== 0) throw new Error(`${command} ${args.join(" ")} exited ${result.code}: ${result.stderr}`)
  return result.millis
}

/** Runs row 6. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.try({
    try: () => {
      const started = performance.now()
      const starts = 10
      context.log("startup: build, pack and npm install of gcx (reused while the tarballs are unchanged)")
      const { app, bin } = App.installedGcx()
      const sides = {
        gcx: () => timeStart(bin, ["--version"], app),
        help: () => timeStart(bin, ["--help"], app),
        node: () => timeStart(process.execPath, ["-e", "0"], app)
      }
      for (const side of Object.values(sides)) side()
      const runs = { gcx: [] as Array<number>, help: [] as Array<number>, node: [] as Array<number> }
      for (let i = 0; i < starts; i++) {
        runs.gcx.push(sides.gcx())
        runs.node.push(sides.node())
        runs.help.push(sides.help())
      }
      const gcx = round(median(runs.gcx), 1)
      const help = round(median(runs.help), 1)
      const node = round(median(runs.node), 1)
      context.log(`startup: gcx --version ${fmt(gcx)} ms, gcx --help ${fmt(help)} ms, node -e 0 ${fmt(node)} ms`)
      return {
        number: 6,
        id: "startup",
        title: "Start-up",
        baseline: "node -e 0",
        params: { starts, statistic: "median", bin: "node_modules/.bin/gcx of an npm-installed app", app },
        figures: {
          gcxVersionMillis: gcx,
          gcxHelpMillis: help,
          nodeMillis: node,
          runs: Object.fromEntries(Object.entries(runs).map(([side, values]) => [side, values.map((v) => round(v, 1))]))
        },
        lines: [
          {
            measure: `ms to run the installed gcx --version (median of ${starts} starts)`,
            gcx: fmt(gcx),
            baseline: fmt(node),
            ratio: fmt(gcx / node, 2),
            goal: "startup.version"
          },
          {
            measure: `ms to run the installed gcx --help (median of ${starts} starts)`,
            gcx: fmt(help),
            baseline: fmt(node),
            ratio: fmt(help / node, 2)
          }
        ],
        goals: [goal("startup.version", "installed gcx --version, median ms", "<=", goalMillis, gcx)],
        notes: [
          "the bin runs the bundled CLI (dist/gcx/bin.js, one module and lazily loaded chunks) on plain node"
        ],
        seconds: round((performance.now() - started) / 1000, 1)
      }
    },
    catch: (error) => error instanceof Error ? error : new Error(String(error))
  })
