/**
 * Makes the package.json of every package under `packages/` publishable, the same way for all:
 *
 *   pnpm packages:sync            # rewrites every packages/<name>/package.json
 *   pnpm packages:sync --check    # exits 1 when one is not as this script would write it
 *   pnpm packages:sync packages/workflow
 *
 * - `exports`: every module of `src/` (a `"./*"` pattern, so a new module needs no entry) with the
 *   `@gcx/source` condition (the TypeScript source, used inside this repository only) before
 *   `types` and `default` (the build in `dist/`); `internal/*` stays blocked.
 * - `effect`, every `@effect/*` and `@opentelemetry/*` package the package depends on become
 *   `peerDependencies` (a caret range on the catalog's pin, so that the application and gcx share
 *   one copy) with the catalog pin in `devDependencies`; `@opentelemetry/*` and
 *   `@effect/opentelemetry`, and any peer already marked optional, are optional peers.
 * - The metadata npm and the registry need: version, license, keywords, engines, repository,
 *   `sideEffects: false`, `files` (without `dist/.tsbuildinfo` and the bundles' source maps),
 *   `publishConfig.access`.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Url from "node:url"

const root = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "..")

/** The source condition: resolves a `@gcx/*` import to its TypeScript source, inside this repository. */
export const sourceCondition = "@gcx/source"

/** The lowest Node version: Effect 4 needs 22.19 (and `require(esm)` without a flag is there). */
const nodeEngines = ">=22.19.0"

/** Dependencies an application shares with gcx: peers, pinned in devDependencies. */
const isPeer = (name: string) => name === "effect" || name.startsWith("@effect/") || name.startsWith("@opentelemetry/")

/** Peers that only an opt-in module uses (`@gcx/http/Telemetry`): an application installs them to use it. */
const isOptionalPeer = (name: string) => name.startsWith("@opentelemetry/") || name === "@effect/opentelemetry"

/** Dependencies of the repository's own tooling, never of a published package. */
const devOnly = new Set(["tsx"])

/** The catalog of pnpm-workspace.yaml: name to pinned version. */
export const readCatalog = (): Record<string, string> => {
  const lines = Fs.readFileSync(Path.join(root, "pnpm-workspace.yaml"), "utf8").split("\n")
  const catalog: Record<string, string> = {}
  let inCatalog = false
  for (const line of lines) {
    if (/^\S/.test(line)) inCatalog = line.trim() === "catalog:"
    const entry = inCatalog ? /^\s+"?([^":\s]+)"?:\s*"?([^"\s]+)"?/.exec(line) : null
    if (entry) catalog[entry[1]!] = entry[2]!
  }
  return catalog
}

type Dependencies = Record<string, string>

interface PackageJson {
  readonly name: string
  readonly description?: string
  readonly keywords?: ReadonlyArray<string>
  readonly bin?: Record<string, string>
  readonly imports?: Record<string, unknown>
  readonly scripts?: Record<string, string>
  readonly dependencies?: Dependencies
  readonly peerDependencies?: Dependencies
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
  readonly devDependencies?: Dependencies
  readonly [key: string]: unknown
}

const sorted = (record: Dependencies): Dependencies | undefined => {
  const keys = Object.keys(record).sort()
  return keys.length === 0 ? undefined : Object.fromEntries(keys.map((key) => [key, record[key]!]))
}

/** The publishable form of a package's package.json (`directory`: its folder, relative to the root). */
export const publishable = (
  pkg: PackageJson,
  directory: string,
  catalog: Record<string, string>
): Record<string, unknown> => {
  const dependencies: Dependencies = {}
  const peers: Dependencies = {}
  const optional = new Set<string>()
  const dev: Dependencies = { ...pkg.devDependencies }
  const runtime = { ...pkg.dependencies, ...pkg.peerDependencies }
  for (const name of Object.keys(runtime)) {
    if (devOnly.has(name)) {
      dev[name] = "catalog:"
    } else if (isPeer(name)) {
      const pin = catalog[name]
      if (pin === undefined) throw new Error(`${pkg.name}: ${name} is not in the catalog of pnpm-workspace.yaml`)
      peers[name] = `^${pin}`
      dev[name] = "catalog:"
      if (isOptionalPeer(name) || pkg.peerDependenciesMeta?.[name]?.optional === true) optional.add(name)
    } else {
      dependencies[name] = runtime[name]!
    }
  }
  const entry = (path: string) => ({
    [sourceCondition]: `./src/${path}.ts`,
    types: `./dist/${path}.d.ts`,
    default: `./dist/${path}.js`
  })
  const keywords = [...new Set(["effect", "gcx", "gift-card", ...(pkg.keywords ?? [])])]
  const files = [
    "dist",
    "!dist/.tsbuildinfo",
    // the source maps of a bundle (the CLI's, 18 MB): written by the build, never shipped
    "!dist/**/*.mjs.map",
    "src",
    ...(pkg.bin === undefined ? [] : ["bin"]),
    "README.md",
    "CHANGELOG.md"
  ]
  const out: Record<string, unknown> = {
    name: pkg.name,
    version: pkg.version ?? "0.1.0",
    description: pkg.description,
    keywords,
    license: "MIT",
    homepage: `https://github.com/gcx-dev/gcx/tree/main/${directory}#readme`,
    repository: { type: "git", url: "git+https://github.com/gcx-dev/gcx.git", directory },
    type: "module",
    sideEffects: false,
    engines: { node: nodeEngines },
    exports: {
      "./package.json": "./package.json",
      ".": entry("index"),
      "./*": entry("*"),
      "./internal/*": null
    },
    imports: pkg.imports,
    files,
    bin: pkg.bin,
    scripts: pkg.scripts,
    publishConfig: { access: "public", provenance: false },
    dependencies: sorted(dependencies),
    peerDependencies: sorted(peers),
    peerDependenciesMeta: optional.size === 0 ?
      undefined :
      Object.fromEntries([...optional].sort().map((name) => [name, { optional: true }])),
    devDependencies: sorted(dev)
  }
  return Object.fromEntries(Object.entries(out).filter(([, value]) => value !== undefined))
}

/** The package folders under packages/. */
export const packageDirectories = (): ReadonlyArray<string> =>
  Fs.readdirSync(Path.join(root, "packages"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && Fs.existsSync(Path.join(root, "packages", entry.name, "package.json")))
    .map((entry) => `packages/${entry.name}`)
    .sort()

const main = () => {
  const args = process.argv.slice(2)
  const check = args.includes("--check")
  const named = args.filter((arg) => !arg.startsWith("--")).map((arg) => Path.relative(root, Path.resolve(arg)))
  const catalog = readCatalog()
  let stale = 0
  for (const directory of named.length > 0 ? named : packageDirectories()) {
    const file = Path.join(root, directory, "package.json")
    const before = Fs.readFileSync(file, "utf8")
    const after = JSON.stringify(publishable(JSON.parse(before), directory, catalog), null, 2) + "\n"
    if (before === after) continue
    stale++
    if (check) console.error(`${directory}/package.json is not publishable as it stands: run pnpm packages:sync`)
    else {
      Fs.writeFileSync(file, after)
      console.log(`${directory}/package.json rewritten`)
    }
  }
  if (check && stale > 0) process.exitCode = 1
}

if (process.argv[1] !== undefined && Url.pathToFileURL(process.argv[1]).href === import.meta.url) main()
