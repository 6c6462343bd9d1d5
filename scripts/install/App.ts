/**
 * gcx as a user meets it: the packages built and packed, then installed with npm into an
 * application of its own, outside the workspace. Used by `pnpm test:install` and by the
 * bench's start-up row (`pnpm bench --only startup`).
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Url from "node:url"
import { packageDirectories, readCatalog } from "../package-json.js"

/** The repository root. */
export const root = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../..")

/** What a finished process printed and how it ended. */
export interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly millis: number
}

/**
 * The environment of a user's shell: without the `@gcx/source` condition that pnpm puts in
 * `NODE_OPTIONS` inside this repository, and without the `npm_*` variables pnpm sets for scripts.
 */
export const userEnvironment = (extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name === "NODE_OPTIONS" || name.toLowerCase().startsWith("npm_")) continue
    if (name === "PNPM_SCRIPT_SRC_DIR" || name === "INIT_CWD") continue
    env[name] = value
  }
  return { ...env, ...extra }
}

/** Runs a command to its end (killed after `timeout` ms), with the user's environment unless `env` is given. */
export const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Record<string, string>; readonly timeout?: number } = {}
): Result => {
  const started = performance.now()
  const result = ChildProcess.spawnSync(command, args, {
    cwd: options.cwd ?? root,
    env: options.env ?? userEnvironment(),
    encoding: "utf8",
    timeout: options.timeout ?? 120_000,
    maxBuffer: 64 * 1024 * 1024
  })
  return {
    code: result.status,
    stdout: result.stdout ?? "",
    stderr: (result.stderr ?? "") + (result.error === undefined ? "" : `\n${result.error.message}`),
    millis: performance.now() - started
  }
}

/** Like `run`, without blocking: for the slow checks that run side by side. */
export const start = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Record<string, string>; readonly timeout?: number } = {}
): Promise<Result> =>
  new Promise((resolve) => {
    const started = performance.now()
    const child = ChildProcess.spawn(command, args, {
      cwd: options.cwd ?? root,
      env: options.env ?? userEnvironment(),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: options.timeout ?? 120_000
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", (error) => (stderr += `\n${error.message}`))
    child.on("close", (code) => resolve({ code, stdout, stderr, millis: performance.now() - started }))
  })

/** `pnpm build`: every package compiled to its dist/, and the CLI bundled. */
export const build = (): Result =>
  run("pnpm", ["build"], { env: process.env as Record<string, string>, timeout: 600_000 })

/** One packed package. */
export interface Packed {
  readonly name: string
  readonly directory: string
  readonly tarball: string
  /** The package.json inside the tarball, as npm will see it. */
  readonly manifest: {
    readonly name: string
    readonly version: string
    readonly bin?: Record<string, string>
    readonly peerDependencies?: Record<string, string>
    readonly [key: string]: unknown
  }
}

/** The package.json inside a tarball. */
export const manifestOf = (tarball: string): Packed["manifest"] => {
  const result = run("tar", ["-xzOf", tarball, "package/package.json"])
  if (result.code !== 0) throw new Error(`cannot read package.json of ${tarball}: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

/** `pnpm pack` of every package under packages/ into `destination`, side by side (needs `build` first). */
export const packAll = (destination: string): Promise<ReadonlyArray<Packed>> => {
  Fs.mkdirSync(destination, { recursive: true })
  return Promise.all(
    packageDirectories().map(async (directory) => {
      const name = JSON.parse(Fs.readFileSync(Path.join(root, directory, "package.json"), "utf8")).name as string
      const result = await start("pnpm", ["pack", "--pack-destination", destination], {
        cwd: Path.join(root, directory),
        env: process.env as Record<string, string>
      })
      const tarball = result.stdout.trim().split("\n").map((line) => line.trim()).filter((line) =>
        line.endsWith(".tgz")
      )
        .at(-1)
      if (result.code !== 0 || tarball === undefined) {
        throw new Error(`pnpm pack failed in ${directory}: ${result.stderr || result.stdout}`)
      }
      const path = Path.isAbsolute(tarball) ? tarball : Path.join(destination, Path.basename(tarball))
      return { name, directory, tarball: path, manifest: manifestOf(path) }
    })
  )
}

/**
 * What the application installs from the registry beside the tarballs: every peer of every
 * package (the optional ones too, so that every module can load) at the catalog's pin, and
 * TypeScript with Node's types for the typed consumer.
 */
export const registryPackages = (packed: ReadonlyArray<Packed>): ReadonlyArray<string> => {
  const catalog = readCatalog()
  const names = new Set(packed.flatMap((pkg) => Object.keys(pkg.manifest.peerDependencies ?? {})))
  for (const name of ["typescript", "@types/node"]) names.add(name)
  return [...names].sort().map((name) => {
    const pin = catalog[name]
    if (pin === undefined) throw new Error(`${name} is not in the catalog of pnpm-workspace.yaml`)
    return `${name}@${pin}`
  })
}

/**
 * A new application in `directory` (outside the workspace) with the tarballs and the registry
 * packages installed by npm. Install scripts are skipped: no native module is built, and
 * nothing gcx needs has one.
 */
export const installApp = (directory: string, packed: ReadonlyArray<Packed>): Result => {
  Fs.mkdirSync(directory, { recursive: true })
  Fs.writeFileSync(
    Path.join(directory, "package.json"),
    JSON.stringify({ name: "gcx-consumer", version: "1.0.0", private: true, type: "module" }, null, 2) + "\n"
  )
  return run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    "--loglevel=error",
    ...packed.map((pkg) => pkg.tarball),
    ...registryPackages(packed)
  ], { cwd: directory, timeout: 300_000 })
}

/** A folder under the system's temporary directory, outside the workspace. */
export const temporaryDirectory = (prefix: string): string => Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))

/**
 * The installed `gcx` of the current build: built, packed and installed once per distinct
 * set of tarballs (kept under the system's temporary directory), for the start-up bench.
 */
export const installedGcx = async (): Promise<{ readonly bin: string; readonly app: string }> => {
  const built = build()
  if (built.code !== 0) throw new Error(`pnpm build failed:\n${built.stdout}${built.stderr}`)
  const packs = temporaryDirectory("gcx-packs-")
  const packed = await packAll(packs)
  const hash = Crypto.createHash("sha256")
  for (const pkg of packed) hash.update(Fs.readFileSync(pkg.tarball))
  const app = Path.join(Os.tmpdir(), `gcx-app-${hash.digest("hex").slice(0, 16)}`)
  const bin = Path.join(app, "node_modules", ".bin", "gcx")
  if (!Fs.existsSync(bin)) {
    Fs.rmSync(app, { recursive: true, force: true })
    const installed = installApp(app, packed)
    if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.stderr}`)
  }
  Fs.rmSync(packs, { recursive: true, force: true })
  return { bin, app }
}
