/**
 * `pnpm test:install`: proves gcx the way a user meets it. Builds, packs every package, and
 * installs the tarballs with npm into a new application under the system's temporary folder,
 * exactly as the README's Install section says: the peers it names, with no version (npm takes
 * the registry's latest). Then checks:
 *
 * - each tarball: no `workspace:` or `catalog:` left, `publint` and `@arethetypeswrong/cli`
 *   (esm-only profile) without error; the README's install line names every required peer of
 *   the packages it installs; the CLI's tarball without its bundle's source map, under 2 MB;
 * - `tsc --noEmit` on a strict consumer (NodeNext, exactOptionalPropertyTypes) of every
 *   package's public API, handling errors with `Effect.catchTags` (the optional peers and
 *   TypeScript are added by a second `npm i`);
 * - on Node 24 and on Node 22 (each from the npm registry's `node` package, in `.node/` and
 *   `.node22/`): a plain `node` ES module quotes a card on an in-process sandbox with
 *   `getQuote`, a `.cjs` file does the same through `require(esm)`, an embedded durable quote runs
 *   before the optional peers are installed (`@gcx/workflow` without `@effect/sql-pg`), every public module loads,
 *   and the installed `gcx` runs (`--version`, each command's `--help`, a run of each command's
 *   handler, `quote --durable` embedded on SQLite and client-only on a `gcx runner` over a
 *   throwaway PostgreSQL, and `gcx result` of each); `npx @gcx/cli sandbox` and `npx @gcx/sandbox`,
 *   offline, serve on a loopback port and stop on Ctrl+C;
 * - reported, not required: the plain program under Bun, from its npm package.
 *
 * Prints one line per check and a summary; exits 1 when a required check fails.
 * `--keep` keeps the application's folder (it is printed).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Url from "node:url"
import * as App from "./install/App.js"
import * as Bin from "./install/Bin.js"
import { check, completedQuote, failed, lastLine, passedIf, summarize } from "./install/Checks.js"
import * as Npx from "./install/Npx.js"
import * as Postgres from "./install/Postgres.js"
import { run, start, startService, userEnvironment } from "./install/Process.js"
import * as Runtimes from "./install/Runtimes.js"
import * as Tarball from "./install/Tarball.js"

const consumer = Path.join(Path.dirname(Url.fileURLToPath(import.meta.url)), "install", "consumer")

const keep = process.argv.includes("--keep")
const started = performance.now()
const work = App.temporaryDirectory("gcx-install-")
const app = Path.join(work, "app")
let packed: ReadonlyArray<App.Packed> = []
let postgres: Promise<Postgres.Postgres> | undefined

const main = async () => {
  console.log(`gcx install test in ${work}`)
  // Slow and independent: the Node runtimes, and Bun (reported only), install while gcx builds.
  const runtimes = Runtimes.nodeRuntimes.map((runtime) => ({ runtime, installed: Runtimes.ensureNode(runtime) }))
  for (const { installed } of runtimes) installed.catch(() => undefined)
  const others = Path.join(work, "runtimes")
  Fs.mkdirSync(others)
  Fs.writeFileSync(Path.join(others, "package.json"), JSON.stringify({ name: "runtimes", private: true }))
  const bunInstalled = start("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "bun"], {
    cwd: others,
    timeout: 240_000
  })

  await check("package.json of every package as `pnpm packages:sync` writes it", true, () => {
    const result = run("pnpm", ["packages:sync", "--check"], { env: process.env as Record<string, string> })
    return result.code === 0 ? "" : failed(result)
  })
  if (!(await check("pnpm build", true, () => passedIf(App.build())))) return
  if (
    !await check("pnpm pack of every package", true, async () => {
      packed = await App.packAll(Path.join(work, "packs"))
      return packed.map((pkg) => Path.basename(pkg.tarball)).join(", ")
    })
  ) return

  const cliPack = packed.find((pkg) => pkg.name === "@gcx/cli")
  await check(
    "@gcx/cli: the tarball without its bundle's source map, under 2 MB",
    true,
    () => cliPack === undefined ? { fail: "no @gcx/cli tarball" } : Tarball.cliVerdict(cliPack.tarball)
  )

  const bin = (name: string) => Path.join(App.root, "node_modules", ".bin", name)
  const linted = packed.map((pkg) => ({
    pkg,
    publint: start(bin("publint"), ["run", pkg.tarball, "--level", "error"]),
    attw: start(bin("attw"), [pkg.tarball, "--profile", "esm-only", "--format", "ascii", "--no-color"])
  }))
  for (const { attw, pkg, publint } of linted) {
    await check(`${pkg.name}: workspace: and catalog: turned into version ranges`, true, () => {
      const text = JSON.stringify(pkg.manifest)
      const left = /"(workspace|catalog):[^"]*"/.exec(text)
      if (left !== null) return { fail: `${left[0]} left in package.json` }
      if (pkg.manifest.private === true) return { fail: "private" }
      return Object.entries(pkg.manifest.peerDependencies ?? {}).map(([name, range]) => `${name} ${range}`).join(", ")
    })
    await check(`${pkg.name}: publint`, true, async () => passedIf(await publint, "no error"))
    await check(
      `${pkg.name}: @arethetypeswrong/cli --profile esm-only`,
      true,
      async () => passedIf(await attw, "no problem")
    )
  }

  await check("the README's install line names every required peer of the libraries it installs", true, () => {
    const named = new Set(App.readmeInstallLines().flat())
    const missing = packed
      // the CLI is a command (npm installs its peers); the sandbox, with its bin, is a library too
      .filter((pkg) => named.has(pkg.name) && pkg.manifest.bin?.gcx === undefined)
      .flatMap((pkg) =>
        Object.keys(pkg.manifest.peerDependencies ?? {})
          .filter((peer) => pkg.manifest.peerDependenciesMeta?.[peer]?.optional !== true && !named.has(peer))
          .map((peer) => `${peer} (peer of ${pkg.name})`)
      )
    return missing.length === 0 ? App.readmeInstallLines().map((line) => line.join(" ")).join("; ") : {
      fail: `not in README.md's npm i lines: ${[...new Set(missing)].join(", ")}`
    }
  })
  if (
    !await check(
      "npm i of the tarballs and the README's peers, no version (the registry's latest), in a new app",
      true,
      () => {
        const result = App.installApp(app, packed)
        if (result.code !== 0) return failed(result)
        return App.readmeRegistryPackages().map((name) => {
          const manifest = Path.join(app, "node_modules", name, "package.json")
          return `${name}@${JSON.parse(Fs.readFileSync(manifest, "utf8")).version}`
        }).join(" ")
      }
    )
  ) return
  for (const file of Fs.readdirSync(consumer)) Fs.copyFileSync(Path.join(consumer, file), Path.join(app, file))

  // The README's minimal program, verbatim, and the in-process ones, before anything else is installed.
  Fs.writeFileSync(Path.join(app, "readme.mjs"), App.readmeProgram())
  const quoteChecks = async (runtime: Runtimes.NodeRuntime, on: string) => {
    await check(
      `the README's minimal program, verbatim, ${on}: against \`gcx sandbox\`'s GCX_* variables`,
      true,
      async () => {
        // as the README says: `npx @gcx/cli sandbox` prints the GCX_* variables to export
        const sandbox = await startService(
          Path.join(app, "node_modules", ".bin", "gcx"),
          ["sandbox", "--port", "0"],
          /GCX_API_KEY=\S+/,
          { cwd: app, env: Runtimes.environmentOn(runtime), timeout: 60_000 }
        )
        try {
          const variables = Object.fromEntries(
            [...sandbox.output().matchAll(/\b(GCX_\w+)=(\S+)/g)].map(([, name, value]) => [name!, value!])
          )
          const result = run(runtime.node, ["readme.mjs"], {
            cwd: app,
            env: Runtimes.environmentOn(runtime, variables)
          })
          return result.code === 0 && /^balance \S+, offered \S+$/m.test(result.stdout)
            ? lastLine(result.stdout)
            : failed(result)
        } finally {
          await sandbox.stop()
        }
      }
    )
    await check(
      `plain node ES module ${on}: in-process sandbox, getQuote, completed values`,
      true,
      () => completedQuote(run(runtime.node, ["quote.mjs"], { cwd: app, env: Runtimes.environmentOn(runtime) }))
    )
    await check(
      `CommonJS file through require(esm) ${on}: the same quote`,
      true,
      () => completedQuote(run(runtime.node, ["quote.cjs"], { cwd: app, env: Runtimes.environmentOn(runtime) }))
    )
    await check(
      `a durable quote embedded on SQLite ${on}, without the optional peers (no @effect/sql-pg)`,
      true,
      () =>
        Fs.existsSync(Path.join(app, "node_modules", "@effect", "sql-pg"))
          ? { fail: "@effect/sql-pg is installed: the check would prove nothing" }
          : completedQuote(run(runtime.node, ["durable.mjs"], { cwd: app, env: Runtimes.environmentOn(runtime) }))
    )
  }
  const versions = new Map<Runtimes.NodeRuntime, string>()
  for (const { installed, runtime } of runtimes) {
    const ready = await check(
      `Node ${runtime.major} from npm (npm i --prefix ${
        Path.relative(App.root, runtime.prefix)
      } node@${runtime.major})`,
      true,
      async () => {
        const version = await installed
        if (runtime.major === 22 && !versionAtLeast(version, [22, 19, 0])) {
          return { fail: `${version}: gcx needs 22.19 or newer` }
        }
        versions.set(runtime, version)
        return version
      }
    )
    if (ready) await quoteChecks(runtime, `on Node ${runtime.major}`)
  }

  if (
    !await check("npm i of the optional peers (gcx's ranges) and TypeScript, for every module", true, () => {
      const result = App.installExtras(app, packed)
      return result.code === 0 ? App.extraPackages(packed).join(" ") : failed(result)
    })
  ) return
  // Every public module of every package (dist/*.js but the entry points that run at import).
  const modules = packed.flatMap((pkg) =>
    Fs.readdirSync(Path.join(app, "node_modules", pkg.name, "dist"))
      .filter((file) => file.endsWith(".js") && !["bin.js", "demo.js"].includes(file))
      .map((file) => file === "index.js" ? pkg.name : `${pkg.name}/${file.slice(0, -3)}`)
  )
  const alias = (specifier: string) => specifier.replace(/^@gcx\//, "").replace(/\W/g, "_")
  Fs.writeFileSync(
    Path.join(app, "modules.mjs"),
    modules.map((specifier) => `await import(${JSON.stringify(specifier)})\n`).join("") +
      `console.log("${modules.length} modules loaded")\n`
  )
  Fs.writeFileSync(
    Path.join(app, "api.ts"),
    modules.map((specifier) => `export * as ${alias(specifier)} from ${JSON.stringify(specifier)}\n`).join("")
  )
  await check("tsc --noEmit on a strict consumer (NodeNext, exactOptionalPropertyTypes, catchTags)", true, () => {
    const result = run(process.execPath, [Path.join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "."], {
      cwd: app,
      timeout: 180_000
    })
    return result.code === 0 ? `${modules.length} public modules typed` : failed(result)
  })

  const cli = packed.find((pkg) => pkg.manifest.bin?.gcx !== undefined)
  for (const runtime of versions.keys()) {
    await check(`every public module loads on Node ${runtime.major}`, true, () => {
      const result = run(runtime.node, ["modules.mjs"], { cwd: app, env: Runtimes.environmentOn(runtime) })
      return result.code === 0 ? lastLine(result.stdout) : failed(result)
    })
    await Bin.checks({
      app,
      runtime,
      version: cli?.manifest.version,
      postgres: () => (postgres ??= Postgres.startPostgres())
    })
    await Npx.checks(app, runtime)
  }

  // Bun, from its npm package: reported, never required.
  const installed = await bunInstalled
  // The same program over FetchHttpClient: under Bun, undici's client is the part that differs.
  Fs.writeFileSync(
    Path.join(app, "quote-fetch.mjs"),
    Fs.readFileSync(Path.join(app, "quote.mjs"), "utf8")
      .replace(
        `import { NodeHttpClient } from "@effect/platform-node"`,
        `import { FetchHttpClient } from "effect/http"`
      )
      .replace("NodeHttpClient.layerUndici", "FetchHttpClient.layer")
  )
  for (
    const [name, program] of [["the plain ES module", "quote.mjs"], [
      "the same over FetchHttpClient",
      "quote-fetch.mjs"
    ]]
  ) {
    await check(`Bun (npm bun): ${name}`, false, () => {
      if (installed.code !== 0) return failed(installed)
      const executable = Path.join(others, "node_modules", ".bin", "bun")
      const version = run(executable, ["--version"], { cwd: app })
      const done = completedQuote(run(executable, [program], { cwd: app, env: userEnvironment() }))
      return typeof done === "string" ? `${version.stdout.trim()}: ${done}` : done
    })
  }
}

/** Whether a `vX.Y.Z` version is at least `minimum`. */
const versionAtLeast = (version: string, minimum: readonly [number, number, number]) => {
  const parts = version.replace(/^v/, "").split(".").map(Number)
  for (let i = 0; i < 3; i++) {
    if ((parts[i] ?? 0) !== minimum[i]) return (parts[i] ?? 0) > minimum[i]!
  }
  return true
}

try {
  await main()
} finally {
  if (postgres !== undefined) await postgres.then((server) => server.stop(), () => undefined)
  summarize((performance.now() - started) / 1000)
  if (keep) console.log(`kept: ${work}`)
  else Fs.rmSync(work, { recursive: true, force: true })
}
