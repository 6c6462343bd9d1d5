/**
 * Row 7, start-up: `gcx --version` of the installed bin (built, packed and installed with npm
 * into an application outside the workspace, as a user gets it), beside `node -e 0`, the floor
 * any Node program pays. Starts alternate between the two, after one warm-up start of each (the
 * file cache); the medians are reported. The installed application is reused while the
 * tarballs are the same (`scripts/install/App.ts`). The bin keeps Node's compile cache (V8's code)
 * in the user's cache folder (`$XDG_CACHE_HOME/gcx`, `packages/cli/bin/gcx.mjs`): the row points it
 * at a new folder, so that its first start, which compiles and writes the cache, is measured too
 * (a line of its own). Beside them, the floor of the library: the smallest `effect/cli` program
 * (`bench/ladder/cli.ts`), bundled with the CLI's esbuild options and started with the compile
 * cache as the bin starts gcx.
 */
import * as Effect from "effect/Effect"
import * as Esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as BundleCli from "../../scripts/bundle-cli.js"
import * as App from "../../scripts/install/App.js"
import * as Process from "../../scripts/install/Process.js"
import { inBench } from "../internal/paths.js"
import type { Line, RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import { median, round } from "../internal/stats.js"

/** The goal: the installed `gcx --version` in at most this many milliseconds. */
const goalMillis = 250

/** GNU time, when the machine has it: the CPU a start costs, which a busy machine inflates less than the wall clock. */
const gnuTime = "/usr/bin/time"
const hasGnuTime = Fs.existsSync(gnuTime)

/** One process start, to its exit (which must be 0): wall-clock ms, and CPU ms (user + system) when measurable. */
const timeStart = (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  env: Record<string, string>
): { readonly wall: number; readonly cpu: number | undefined } => {
  const result = hasGnuTime ?
    Process.run(gnuTime, ["-f", "cpu %U %S", command, ...args], { cwd, env, timeout: 30_000 }) :
    Process.run(command, args, { cwd, env, timeout: 30_000 })
  if (result.code !== 0) throw new Error(`${command} ${args.join(" ")} exited ${result.code}: ${result.stderr}`)
  const cpu = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(result.stderr)
  return { wall: result.millis, cpu: cpu === null ? undefined : (Number(cpu[1]) + Number(cpu[2])) * 1000 }
}

/**
 * The library's floor, `bench/ladder/cli.ts`, bundled as the CLI is into a new folder with a
 * launcher that turns on Node's compile cache in `cache` first, as `bin/gcx.mjs` does: the
 * launcher's path.
 */
const floorLauncher = async (cache: string): Promise<string> => {
  const outdir = App.temporaryDirectory("gcx-startup-floor-")
  await Esbuild.build({
    ...BundleCli.options({ cli: inBench("ladder", "cli.ts") }, outdir),
    sourcemap: false,
    logLevel: "error"
  })
  const folder = Path.join(cache, "floor")
  Fs.mkdirSync(folder, { recursive: true, mode: 0o700 })
  const launcher = Path.join(outdir, "floor.mjs")
  Fs.writeFileSync(
    launcher,
    `import * as Module from "node:module"\nModule.enableCompileCache(${JSON.stringify(folder)})\n` +
      `await import("./cli.mjs")\n`
  )
  return launcher
}

/** A line of a gcx start against `node -e 0`, in milliseconds. */
const againstNode = (measure: string, millis: number, node: number): Line => ({
  measure,
  gcx: fmt(millis),
  baseline: fmt(node),
  ratio: fmt(millis / node, 2)
})

/** Runs row 7. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.tryPromise({
    try: async () => {
      const started = performance.now()
      const starts = 10
      context.log("startup: build, pack and npm install of gcx (reused while the tarballs are unchanged)")
      const { app, bin } = await App.installedGcx()
      const cache = App.temporaryDirectory("gcx-startup-cache-")
      const env = Process.userEnvironment({ XDG_CACHE_HOME: cache })
      // NODE_COMPILE_CACHE would win over the new folder (and turn the cache on for `node -e 0` too)
      delete env.NODE_COMPILE_CACHE
      const floor = await floorLauncher(cache)
      const sides = {
        gcx: () => timeStart(bin, ["--version"], app, env),
        help: () => timeStart(bin, ["--help"], app, env),
        node: () => timeStart(process.execPath, ["-e", "0"], app, env),
        floor: () => timeStart(process.execPath, [floor, "--version"], app, env)
      }
      // node first, so that the file cache holds node itself when the first start of gcx is timed
      sides.node()
      const first = timeStart(bin, ["--version"], app, env)
      for (const side of Object.values(sides)) side()
      const runs = {
        gcx: [] as Array<ReturnType<typeof timeStart>>,
        help: [] as Array<ReturnType<typeof timeStart>>,
        node: [] as Array<ReturnType<typeof timeStart>>,
        floor: [] as Array<ReturnType<typeof timeStart>>
      }
      for (let i = 0; i < starts; i++) {
        runs.gcx.push(sides.gcx())
        runs.node.push(sides.node())
        runs.help.push(sides.help())
        runs.floor.push(sides.floor())
      }
      const wall = (side: keyof typeof runs) => round(median(runs[side].map((run) => run.wall)), 1)
      const cpu = (side: keyof typeof runs) => {
        const values = runs[side].flatMap((run) => run.cpu === undefined ? [] : [run.cpu])
        return values.length === 0 ? undefined : round(median(values), 1)
      }
      const gcx = wall("gcx")
      const help = wall("help")
      const node = wall("node")
      const floorMillis = wall("floor")
      const firstMillis = round(first.wall, 1)
      Fs.rmSync(cache, { recursive: true, force: true })
      Fs.rmSync(Path.dirname(floor), { recursive: true, force: true })
      context.log(
        `startup: gcx --version ${fmt(gcx)} ms (first start ${fmt(firstMillis)} ms), gcx --help ${
          fmt(help)
        } ms, node -e 0 ${fmt(node)} ms, the effect/cli floor ${fmt(floorMillis)} ms`
      )
      const cpuLines = cpu("gcx") === undefined ? [] : [
        againstNode("CPU ms (user + system) of the installed gcx --version, median", cpu("gcx")!, cpu("node")!)
      ]
      return {
        number: 7,
        id: "startup",
        title: "Start-up",
        baseline: "node -e 0",
        params: { starts, statistic: "median", bin: "node_modules/.bin/gcx of an npm-installed app", app },
        figures: {
          gcxVersionMillis: gcx,
          gcxHelpMillis: help,
          gcxFirstStartMillis: firstMillis,
          nodeMillis: node,
          floorMillis,
          gcxVersionCpuMillis: cpu("gcx") ?? null,
          nodeCpuMillis: cpu("node") ?? null,
          runs: Object.fromEntries(
            Object.entries(runs).map(([side, values]) => [side, values.map((run) => round(run.wall, 1))])
          )
        },
        lines: [
          {
            ...againstNode(`ms to run the installed gcx --version (median of ${starts} starts)`, gcx, node),
            goal: "startup.version"
          },
          {
            ...againstNode(
              "the same against node -e 0 (the floor of any Node program): ratio of the medians",
              gcx,
              node
            ),
            goal: "startup.ratio"
          },
          againstNode(
            "ms of the very first gcx --version (no code cache yet: compiles, then writes the cache)",
            firstMillis,
            node
          ),
          againstNode(`ms to run the installed gcx --help (median of ${starts} starts)`, help, node),
          againstNode(
            "ms of the smallest effect/cli program's --version (bench/ladder/cli.ts: one command, bundled and " +
              "cached as gcx is): the library's floor, for information",
            floorMillis,
            node
          ),
          ...cpuLines
        ],
        goals: [
          goal("startup.version", "installed gcx --version, median ms", "<=", goalMillis, gcx),
          goal(
            "startup.ratio",
            "installed gcx --version ÷ node -e 0, medians of the same run",
            "<=",
            2,
            round(gcx / node, 2)
          )
        ],
        notes: [
          "the bin runs the bundled CLI (dist/gcx/gcx.mjs, the command definitions, and chunks that a command's " +
          "handler imports when it runs) on plain node, with Node's compile cache in the user's cache folder; " +
          "wall-clock times grow with the machine's load (see node -e 0 and the load average), CPU less so"
        ],
        seconds: round((performance.now() - started) / 1000, 1)
      }
    },
    catch: (error) => error instanceof Error ? error : new Error(String(error))
  })
