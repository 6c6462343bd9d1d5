/**
 * What `gcx` loads at start: the bin's static imports, as esbuild bundles them (`pnpm build`
 * bundles the same graph from `dist/`). The start holds the command definitions only; each
 * command's handler, with the client, the poller, the sandbox or the workflow, is a dynamic
 * import (`Lazy.handler`). The installed bin runs every handler (`pnpm test:install`).
 *
 * And how it is compiled: the package's bin (`bin/gcx.mjs`) keeps V8's code in Node's compile
 * cache, in the user's cache folder, so that the next start neither parses nor compiles it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Esbuild from "esbuild"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Url from "node:url"
import { entries, environment, root } from "./helpers.js"

const cli = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "..")

/** The inputs of the bundle of `src/bin.ts`, from the sources, with their imports (nothing is written). */
const inputs = async (entry = "src/bin.ts"): Promise<Esbuild.Metafile["inputs"]> => {
  const result = await Esbuild.build({
    absWorkingDir: cli,
    entryPoints: [entry],
    outdir: "build/startup-test",
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    conditions: ["@gcx/source"],
    external: ["pg-native", "@opentelemetry/*", "@effect/opentelemetry"],
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

/** The heavy files among `loaded`: what a start must not load. */
const heavyOf = (loaded: ReadonlyArray<string>) =>
  loaded.filter((file) =>
    // `Polling` names the poller's schedules for `--poll-interval`: `PollSchedule` is effect's Schedule only
    (/^(http|poller|sandbox|workflow|gateway)\//.test(file) && file !== "poller/src/PollSchedule.ts") ||
    file === "core/src/Errors.ts" || file.startsWith("cli/src/run/") ||
    ["cli/src/Connection.ts", "cli/src/Render.ts", "cli/src/RunnerNode.ts", "cli/src/DurablePoller.ts"].includes(file)
  )

describe("start-up", () => {
  // one bundle for both tests (each build takes seconds on a busy machine)
  let built: Promise<Esbuild.Metafile["inputs"]> | undefined
  const graphOf = () => (built ??= inputs())

  it("the start loads the command definitions, and no handler, client, poller, sandbox or error class", async () => {
    const graph = await graphOf()
    const loaded = workspaceFiles(staticClosure(graph, "src/bin.ts"))
    expect(loaded).toContain("cli/src/commands/Quote.ts")
    expect(heavyOf(loaded)).toEqual([])
  })

  it("the start loads no node:child_process, node:crypto nor node:readline (Node's spawner, file system and terminal come at first use: Lazy.layerNodeServices)", async () => {
    const graph = await graphOf()
    const builtins = [...staticClosure(graph, "src/bin.ts")].flatMap((file) =>
      (graph[file]?.imports ?? []).filter((imported) => imported.kind === "import-statement" && imported.external)
        .map((imported) => imported.path)
    )
    expect(builtins).toContain("node:path")
    expect(builtins.filter((name) => ["node:child_process", "node:crypto", "node:readline"].includes(name))).toEqual([])
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

  it("gcx serve keys defines its commands without the gateway; their handlers are a dynamic import of run/ServeKeys", async () => {
    const entry = "src/commands/ServeKeys.ts"
    const graph = await inputs(entry)
    expect(heavyOf(workspaceFiles(staticClosure(graph, entry)))).toEqual([])
    const dynamic = (graph[entry]?.imports ?? []).filter((imported) => imported.kind === "dynamic-import")
    expect(workspaceFiles(new Set(dynamic.map((imported) => imported.path)))).toEqual(["cli/src/run/ServeKeys.ts"])
  })
})

/** Starts the package's bin (`gcx --version`), with tsx for the sources, and Node's compile cache reporting what it does. */
const startBin = (env: Record<string, string>) => {
  const result = ChildProcess.spawnSync(entries.executable, ["--version"], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
    env: environment({
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import tsx`,
      NODE_DEBUG_NATIVE: "COMPILE_CACHE",
      ...env
    })
  })
  expect(result.status, result.stderr).toBe(0)
  expect(result.stdout.trim()).toBe("0.1.0")
  return result.stderr
}

/** Whether a start found the code of a module of gcx in the cache, and V8 took it. */
const accepted = (log: string, module: string) =>
  new RegExp(`V8 code cache for ESM \\S*${module.replace(/[.]/g, "\\.")} was accepted`).test(log)

/** The files under a folder, recursively. */
const filesUnder = (directory: string): Array<string> =>
  Fs.readdirSync(directory, { recursive: true, encoding: "utf8" }).filter((name) =>
    Fs.statSync(Path.join(directory, name)).isFile()
  )

describe("the compile cache", () => {
  const temporary = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-compile-cache-"))

  it("the first start writes it in the user's cache folder (private); the next start compiles nothing of gcx", () => {
    const home = temporary()
    const first = startBin({ XDG_CACHE_HOME: home })
    expect(accepted(first, "cli/src/Cli.ts")).toBe(false)
    const folder = Path.join(home, "gcx")
    expect(filesUnder(folder).length).toBeGreaterThan(10)
    expect(Fs.statSync(folder).mode & 0o777).toBe(0o700)
    const second = startBin({ XDG_CACHE_HOME: home })
    for (const module of ["cli/src/Cli.ts", "cli/src/Help.ts", "cli/src/commands/Quote.ts"]) {
      expect(accepted(second, module), module).toBe(true)
    }
  })

  it("NODE_COMPILE_CACHE chooses the folder; NODE_DISABLE_COMPILE_CACHE turns it off", () => {
    const home = temporary()
    const chosen = Path.join(temporary(), "chosen")
    startBin({ XDG_CACHE_HOME: home, NODE_COMPILE_CACHE: chosen })
    expect(filesUnder(chosen).length).toBeGreaterThan(10)
    expect(Fs.existsSync(Path.join(home, "gcx"))).toBe(false)
    const disabled = startBin({ XDG_CACHE_HOME: home, NODE_DISABLE_COMPILE_CACHE: "1" })
    expect(accepted(disabled, "cli/src/Cli.ts")).toBe(false)
    expect(Fs.existsSync(Path.join(home, "gcx"))).toBe(false)
  })

  it("a cache folder that cannot be made costs the cache, never the command", () => {
    const blocked = Path.join(temporary(), "not-a-folder")
    Fs.writeFileSync(blocked, "")
    startBin({ XDG_CACHE_HOME: blocked })
    startBin({ XDG_CACHE_HOME: blocked })
  })
})

describe("the Node it runs on", () => {
  it("an older Node than the packages' engines (the system's Node 20 of these machines) is one error line, exit 2", () => {
    // Node 20 is on the machines that run gcx's tests (docs/contributing.md); gcx itself runs on the project's Node 24
    const system = ["/usr/bin/node", "/usr/local/bin/node"].find((path) => Fs.existsSync(path))
    expect(system, "a system Node to run the bin on").toBeDefined()
    const version = ChildProcess.spawnSync(system!, ["--version"], { encoding: "utf8" }).stdout.trim()
    const [major, minor] = version.slice(1).split(".").map(Number) as [number, number]
    const older = major < 22 || (major === 22 && minor < 19)
    const result = ChildProcess.spawnSync(system!, [Path.join(cli, "bin", "gcx.mjs"), "--version"], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? "" }
    })
    if (older) {
      expect(result.status).toBe(2)
      expect(result.stderr).toBe(
        `error: gcx needs Node 22.19 or newer (Node 24 recommended); this is Node ${version.slice(1)}\n`
      )
    } else {
      expect(result.status, result.stderr).toBe(0)
    }
  })
})
