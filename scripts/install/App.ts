/**
 * gcx as a user meets it: the packages built and packed, then installed with npm into an
 * application of its own, outside the workspace. Used by `pnpm test:install` and by the
 * bench's start-up row (`pnpm bench --only startup`).
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { packageDirectories, readCatalog } from "../package-json.js"
import type { Result } from "./Process.js"
import { root, run, start } from "./Process.js"

export { root } from "./Process.js"
export type { Result } from "./Process.js"

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
    readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
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

/** The README whose Install section the install test follows to the letter. */
export const readme = Path.join(root, "README.md")

/**
 * The `npm i` lines of the README's Install section (its first `sh` block), as written: each
 * line's words, without `npm`, `i`, the flags and the comment.
 */
export const readmeInstallLines = (): ReadonlyArray<ReadonlyArray<string>> => {
  const text = Fs.readFileSync(readme, "utf8")
  const section = /^## Install\n([\s\S]*?)^## /m.exec(text)?.[1]
  const block = section === undefined ? undefined : /```sh\n([\s\S]*?)```/.exec(section)?.[1]
  if (block === undefined) throw new Error("README.md: no ```sh block in the Install section")
  return block.split("\n")
    .map((line) => line.replace(/#.*$/, "").trim().split(/\s+/))
    .filter((words) => words[0] === "npm" && (words[1] === "i" || words[1] === "install"))
    .map((words) => words.slice(2).filter((word) => !word.startsWith("-")))
}

/** The README's minimal program: the first `ts` block (`ts runnable` too) of its Install section, as written (plain JavaScript). */
export const readmeProgram = (): string => {
  const text = Fs.readFileSync(readme, "utf8")
  const section = /^## Install\n([\s\S]*?)^## /m.exec(text)?.[1]
  const block = section === undefined ? undefined : /```ts(?:[ \t][^\n]*)?\n([\s\S]*?)```/.exec(section)?.[1]
  if (block === undefined) throw new Error("README.md: no ```ts block in the Install section")
  return block
}

/**
 * What the README's Install section has an application take from the registry: every name of its
 * `npm i` lines that is not a gcx package, exactly as written (no version: npm takes the
 * registry's latest).
 */
export const readmeRegistryPackages = (): ReadonlyArray<
  string
> => [...new Set(readmeInstallLines().flat().filter((name) => !name.startsWith("@gcx/")))]

/**
 * The optional peers of the packed packages (the OpenTelemetry SDK of `@gcx/http/Telemetry`, the
 * PostgreSQL client of `@gcx/workflow`), at the ranges gcx declares, and the typed consumer's
 * tooling (TypeScript and Node's types, at the repository's versions): what an application adds
 * to use every module. Not part of the README's install line.
 */
export const extraPackages = (packed: ReadonlyArray<Packed>): ReadonlyArray<string> => {
  const ranges = new Map<string, string>()
  for (const pkg of packed) {
    const meta = pkg.manifest.peerDependenciesMeta ?? {}
    for (const [name, range] of Object.entries(pkg.manifest.peerDependencies ?? {})) {
      if (meta[name]?.optional === true) ranges.set(name, range)
    }
  }
  const catalog = readCatalog()
  for (const name of ["typescript", "@types/node"]) {
    const pin = catalog[name]
    if (pin === undefined) throw new Error(`${name} is not in the catalog of pnpm-workspace.yaml`)
    ranges.set(name, pin)
  }
  return [...ranges].sort(([a], [b]) => a.localeCompare(b)).map(([name, range]) => `${name}@${range}`)
}

const npmInstall = (directory: string, specs: ReadonlyArray<string>): Result =>
  run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error", ...specs], {
    cwd: directory,
    timeout: 300_000
  })

/**
 * A new application in `directory` (outside the workspace), installed as the README's Install
 * section says: `npm i` of the tarballs (in place of the `@gcx/*` names) and of the README's
 * registry packages, with no version, so npm takes the registry's latest and the peers gcx
 * declares must accept it. Install scripts are skipped: no native module is built, and nothing
 * gcx needs has one.
 */
export const installApp = (directory: string, packed: ReadonlyArray<Packed>): Result => {
  Fs.mkdirSync(directory, { recursive: true })
  Fs.writeFileSync(
    Path.join(directory, "package.json"),
    JSON.stringify({ name: "gcx-consumer", version: "1.0.0", private: true, type: "module" }, null, 2) + "\n"
  )
  return npmInstall(directory, [...packed.map((pkg) => pkg.tarball), ...readmeRegistryPackages()])
}

/** Then `extraPackages` into the same application, as a second `npm i`. */
export const installExtras = (directory: string, packed: ReadonlyArray<Packed>): Result =>
  npmInstall(directory, extraPackages(packed))

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
