/**
 * What `gcx` loads at start: the bin's static imports, as esbuild bundles them (`pnpm build`
 * bundles the same graph from `dist/`). The start holds the command definitions only; each
 * command's handler, with the client, the poller, the sandbox or the workflow, is a dynamic
 * import (`Lazy.handler`). The installed bin runs every handler (`pnpm test:install`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Esbuild from "esbuild"
import * as Path from "node:path"
import * as Url from "node:url"

const cli = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "..")

/** The inputs of the bundle of `src/bin.ts`, from the sources, with their imports (nothing is written). */
const inputs = async (): Promise<Esbuild.Metafile["inputs"]> => {
  const result = await Esbuild.build({
    absWorkingDir: cli,
    entryPoints: ["src/bin.ts"],
    outdir: "build/startup-test",
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    conditions: ["@gcx/source"],
    external: ["better-sqlite3", "pg-native", "@opentelemetry/*", "@effect/opentelemetry"],
    metafile: true,
    write: false,
    logLevel: "silent"
  })
  return result.metafile.inputs
}

/** The files the entry reaches through static imports only: what is evaluated before `gcx` parses its command line. */
const staticClosure = (graph: Esbuild.Metafile["inputs"], entry: string): Set<string> => {
  const reached = new Set<string>()
  const pending = [entry]
  while (pending.length > 0) {
    const file = pending.pop()!
    if (reached.has(file)) continue
    reached.add(file)
    for (const imported of graph[file]?.imports ?? []) {
      if (imported.kind === "import-statement" && imported.external !== true) pending.push(imported.path)
    }
  }
  return reached
}

/** The workspace files among `files`, relative to `packages/`. */
const workspaceFiles = (files: Iterable<string>): Array<string> =>
  [...files].filter((file) => !file.includes("node_modules")).map((file) =>
    Path.relative(Path.resolve(cli, ".."), Path.resolve(cli, file))
  )

describe("start-up", () => {
  // one bundle for both tests (each build takes seconds on a busy machine)
  let built: Promise<Esbuild.Metafile["inputs"]> | undefined
  const graphOf = () => (built ??= inputs())

  it("the start loads the command definitions, and no handler, client, poller, sandbox or error class", async () => {
    const graph = await graphOf()
    const loaded = workspaceFiles(staticClosure(graph, "src/bin.ts"))
    expect(loaded).toContain("cli/src/commands/Quote.ts")
    // `Polling` names the poller's schedules for `--poll-interval`: `PollSchedule` is effect's Schedule only
    const heavy = loaded.filter((file) =>
      (/^(http|poller|sandbox|workflow)\//.test(file) && file !== "poller/src/PollSchedule.ts") ||
      file === "core/src/Errors.ts" || file.startsWith("cli/src/run/") ||
      ["cli/src/Connection.ts", "cli/src/Render.ts", "cli/src/RunnerNode.ts", "cli/src/DurablePoller.ts"].includes(file)
    )
    expect(heavy).toEqual([])
  })

  it("each command's handler is a dynamic import of its own module", async () => {
    const graph = await graphOf()
    const handlers = Object.fromEntries(
      ["Batch", "Heartbeat", "Quote", "Runner", "SandboxCommand", "Watch"].map((command) => [
        command,
        workspaceFiles(
          (graph[`src/commands/${command}.ts`]?.imports ?? [])
            .filter((imported) => imported.kind === "dynamic-import")
            .map((imported) => imported.path)
        )
      ])
    )
    expect(handlers).toEqual({
      Batch: ["cli/src/run/Batch.ts"],
      Heartbeat: ["cli/src/run/Heartbeat.ts"],
      Quote: ["cli/src/run/Quote.ts"],
      Runner: ["cli/src/RunnerNode.ts"],
      SandboxCommand: ["cli/src/run/SandboxCommand.ts"],
      Watch: ["cli/src/run/Watch.ts"]
    })
  })
})
