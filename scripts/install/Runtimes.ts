/**
 * The Node versions the install test runs its consumers on, each from the npm registry's `node`
 * package in a git-ignored folder of the repository; the system's node is never replaced.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { root, run, start, userEnvironment } from "./Process.js"

/** A Node major version the install test runs its consumers on. */
export interface NodeRuntime {
  readonly major: number
  /** Its folder, project-local and git-ignored: `.node/` for Node 24 (as `.ci/run`), `.node22/` for Node 22. */
  readonly prefix: string
  /** The folder of its `node` (first on PATH for its consumers, so that the `gcx` bin's `env node` finds it). */
  readonly binDirectory: string
  readonly node: string
}

/** The Node runtimes of the install test, the current LTS first. */
export const nodeRuntimes: ReadonlyArray<NodeRuntime> = [
  { major: 24, folder: ".node" },
  { major: 22, folder: ".node22" }
].map(({ folder, major }) => {
  const prefix = Path.join(root, folder)
  const binDirectory = Path.join(prefix, "node_modules", ".bin")
  return { major, prefix, binDirectory, node: Path.join(binDirectory, "node") }
})

/** The version a `node` prints, or undefined when there is none. */
export const nodeVersion = (node: string): string | undefined => {
  if (!Fs.existsSync(node)) return undefined
  const result = run(node, ["--version"], { timeout: 30_000 })
  return result.code === 0 ? result.stdout.trim() : undefined
}

/**
 * The runtime's `node`, installed when missing from the npm registry's `node` package
 * (`npm i --prefix <folder> --no-save node@<major>`, the README's and `.ci/run`'s way); never the
 * system's node. Resolves to its version.
 */
export const ensureNode = async (runtime: NodeRuntime): Promise<string> => {
  const installed = nodeVersion(runtime.node)
  if (installed?.startsWith(`v${runtime.major}.`)) return installed
  const result = await start("npm", [
    "install",
    "--prefix",
    runtime.prefix,
    "--no-audit",
    "--no-fund",
    "--no-save",
    "--loglevel=error",
    `node@${runtime.major}`
  ], { timeout: 300_000 })
  const version = nodeVersion(runtime.node)
  if (result.code !== 0 || version === undefined || !version.startsWith(`v${runtime.major}.`)) {
    throw new Error(`npm i --prefix ${runtime.prefix} node@${runtime.major} failed: ${result.stderr.trim()}`)
  }
  return version
}

/** The user's environment with `runtime`'s node first on PATH. */
export const environmentOn = (runtime: NodeRuntime, extra: Record<string, string> = {}): Record<string, string> => {
  const env = userEnvironment(extra)
  return { ...env, PATH: [runtime.binDirectory, env.PATH ?? ""].join(Path.delimiter) }
}
