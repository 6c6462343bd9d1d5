/**
 * `pnpm test:install`: proves gcx the way a user meets it. Builds, packs every package,
 * installs the tarballs with npm into a new application outside the workspace, with the peers
 * from the registry at the catalog's pins, then checks:
 *
 * - each tarball: no `workspace:` or `catalog:` left, `publint` and `@arethetypeswrong/cli`
 *   (esm-only profile) without error;
 * - a plain `node` ES module quotes a card on an in-process sandbox with `getQuote`, and a
 *   `.cjs` file does the same through `require(esm)`; every public module loads;
 * - `tsc --noEmit` on a strict consumer (NodeNext, exactOptionalPropertyTypes) of every
 *   package's public API, handling errors with `Effect.catchTags`;
 * - the installed `gcx`: `--version`, each command's `--help`, and a run of each command's
 *   handler (each evaluated only when its command runs): `quote --embedded --json`
 *   (last line `Completed`), `heartbeat`, `watch`, `batch`, `sandbox` and `runner`;
 * - reported, not required: the plain program under Node 22 and Bun, from their npm packages.
 *
 * Prints one line per check and a summary; exits 1 when a required check fails.
 * `--keep` keeps the application's folder (it is printed).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Url from "node:url"
import * as App from "./install/App.js"

const consumer = Path.join(Path.dirname(Url.fileURLToPath(import.meta.url)), "install", "consumer")

interface Outcome {
  readonly name: string
  readonly required: boolean
  readonly ok: boolean
  readonly detail: string
  readonly seconds: number
}

const outcomes: Array<Outcome> = []

/** A check's verdict: what it found (passed), or why it failed. */
type Verdict = string | { readonly fail: string }

/** Runs one check, prints its line and records it; a thrown error is a failure. */
const check = async (
  name: string,
  required: boolean,
  body: () => Verdict | Promise<Verdict>
): Promise<boolean> => {
  const started = performance.now()
  let ok = false
  let detail: string
  try {
    const result = await body()
    ok = typeof result === "string"
    detail = typeof result === "string" ? result : result.fail
  } catch (error) {
    detail = error instanceof Error ? error.message : String(error)
  }
  const seconds = (performance.now() - started) / 1000
  outcomes.push({ name, required, ok, detail, seconds })
  const status = ok ? "PASS" : required ? "FAIL" : "NOT OK (reported only)"
  console.log(`${status}  ${name} (${seconds.toFixed(1)} s)${detail === "" ? "" : `: ${detail}`}`)
  return ok
}

/** The last non-empty line of an output. */
const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? ""

/** A failure with what the process printed (its tail). */
const failed = (result: App.Result) => ({
  fail: `exit ${result.code}\n${(result.stdout + result.stderr).trim().split("\n").slice(-25).join("\n")}`
})

/** Passes when the process exited 0. */
const passedIf = (result: App.Result, detail = ""): Verdict => result.code === 0 ? detail : failed(result)

/** Checks that a program printed a completed quote as its last line. */
const completedQuote = (result: App.Result) => {
  if (result.code !== 0) return failed(result)
  const printed = JSON.parse(lastLine(result.stdout))
  return printed._tag === "Completed" ? lastLine(result.stdout) : { fail: `last line: ${lastLine(result.stdout)}` }
}

const keep = process.argv.includes("--keep")
const started = performance.now()
const work = App.temporaryDirectory("gcx-install-")
const app = Path.join(work, "app")
let packed: ReadonlyArray<App.Packed> = []

const main = async () => {
  console.log(`gcx install test in ${work}`)
  await check("package.json of every package as `pnpm packages:sync` writes it", true, () => {
    const result = App.run("pnpm", ["packages:sync", "--check"], { env: process.env as Record<string, string> })
    return result.code === 0 ? "" : failed(result)
  })
  if (!(await check("pnpm build", true, () => passedIf(App.build())))) return
  if (
    !await check("pnpm pack of every package", true, async () => {
      packed = await App.packAll(Path.join(work, "packs"))
      return packed.map((pkg) => Path.basename(pkg.tarball)).join(", ")
    })
  ) return

  // Slow and independent: the other runtimes' install, publint and attw run side by side.
  const runtimes = Path.join(work, "runtimes")
  Fs.mkdirSync(runtimes)
  Fs.writeFileSync(Path.join(runtimes, "package.json"), JSON.stringify({ name: "runtimes", private: true }))
  const runtimesInstalled = App.start("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    "node@22",
    "bun"
  ], {
    cwd: runtimes,
    timeout: 240_000
  })
  const bin = (name: string) => Path.join(App.root, "node_modules", ".bin", name)
  const linted = packed.map((pkg) => ({
    pkg,
    publint: App.start(bin("publint"), ["run", pkg.tarball, "--level", "error"]),
    attw: App.start(bin("attw"), [pkg.tarball, "--profile", "esm-only", "--format", "ascii", "--no-color"])
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

  if (
    !await check("npm install of the tarballs and the peers (registry, catalog pins) in a new app", true, () => {
      const result = App.installApp(app, packed)
      return result.code === 0 ? App.registryPackages(packed).join(" ") : failed(result)
    })
  ) return
  for (const file of Fs.readdirSync(consumer)) Fs.copyFileSync(Path.join(consumer, file), Path.join(app, file))
  // Every public module of every package (dist/*.js but the entry points that run at import).
  const modules = packed.flatMap((pkg) =>
    Fs.readdirSync(Path.join(app, "node_modules", pkg.name, "dist"))
      .filter((file) => file.endsWith(".js") && !["bin.js", "demo.js", "launch.js"].includes(file))
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

  await check(
    "plain node ES module: in-process sandbox, getQuote, completed values",
    true,
    () => completedQuote(App.run(process.execPath, ["quote.mjs"], { cwd: app, timeout: 60_000 }))
  )
  await check(
    "CommonJS file through require(esm): the same quote",
    true,
    () => completedQuote(App.run(process.execPath, ["quote.cjs"], { cwd: app, timeout: 60_000 }))
  )
  await check("every public module loads under plain node", true, () => {
    const result = App.run(process.execPath, ["modules.mjs"], { cwd: app, timeout: 60_000 })
    return result.code === 0 ? lastLine(result.stdout) : failed(result)
  })
  await check("tsc --noEmit on a strict consumer (NodeNext, exactOptionalPropertyTypes, catchTags)", true, () => {
    const result = App.run(process.execPath, [Path.join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "."], {
      cwd: app,
      timeout: 180_000
    })
    return result.code === 0 ? `${modules.length} public modules typed` : failed(result)
  })

  const gcx = Path.join(app, "node_modules", ".bin", "gcx")
  // the bin's code cache (`CodeCache`) goes to the application's folder, not the user's
  process.env.XDG_CACHE_HOME = Path.join(app, ".cache")
  const cli = packed.find((pkg) => pkg.manifest.bin?.gcx !== undefined)
  await check("installed bin: gcx --version", true, () => {
    const result = App.run(gcx, ["--version"], { cwd: app })
    if (result.code !== 0) return failed(result)
    const version = result.stdout.trim()
    const cached = Fs.existsSync(Path.join(app, ".cache", "gcx")) &&
      Fs.readdirSync(Path.join(app, ".cache", "gcx")).some((name) => name.endsWith(".v8cache"))
    if (!cached) return { fail: "no code cache was written" }
    return version === cli?.manifest.version
      ? version
      : { fail: `printed ${version}, package is ${cli?.manifest.version}` }
  })
  await check("installed bin: gcx quote --embedded --json (last line Completed)", true, () => {
    const result = App.run(gcx, [
      "quote",
      "--embedded",
      "--json",
      "--card",
      "6006000000000019",
      "--pin",
      "1234",
      "--product",
      "1000"
    ], { cwd: app, timeout: 60_000 })
    return completedQuote(result)
  })
  // Each command's handler is a module of the bundle evaluated only when its command runs: every
  // command's help, and a run of each handler, prove that each one is bundled and runs on plain node.
  for (const command of ["heartbeat", "quote", "watch", "batch", "sandbox", "runner"]) {
    await check(`installed bin: gcx ${command} --help`, true, () => {
      const result = App.run(gcx, [command, "--help"], { cwd: app })
      return result.code === 0 && result.stdout.includes(`$ ${command}`) ? "" : failed(result)
    })
  }
  await check("installed bin: gcx heartbeat --embedded --json", true, () => {
    const result = App.run(gcx, ["heartbeat", "--embedded", "--json"], { cwd: app, timeout: 60_000 })
    if (result.code !== 0) return failed(result)
    return JSON.parse(lastLine(result.stdout)).ok === true ? lastLine(result.stdout) : failed(result)
  })
  await check("installed bin: gcx watch of an unknown transaction exits 2 (TransactionNotFound)", true, () => {
    const result = App.run(gcx, ["watch", "00000000-0000-0000-0000-000000000000", "--embedded"], {
      cwd: app,
      timeout: 60_000
    })
    return result.code === 2 && result.stderr.includes("TransactionNotFound") ? lastLine(result.stderr) : failed(result)
  })
  await check("installed bin: gcx batch --embedded --json of two cards", true, () => {
    Fs.writeFileSync(
      Path.join(app, "cards.csv"),
      "cardNumber,pinNumber,productLineId\n6006000000000019,1234,1000\n6006000000000035,1234,1000\n"
    )
    const result = App.run(gcx, ["batch", "cards.csv", "--embedded", "--json"], { cwd: app, timeout: 60_000 })
    const statuses = result.stdout.trim().split("\n").map((line) => JSON.parse(line).status).sort()
    // the invalid card fails as a card outcome: exit code 3
    return result.code === 3 && statuses.join(" ") === "completed failed" ? statuses.join(", ") : failed(result)
  })
  await check("installed bin: gcx sandbox with a bad --fault rule exits 2", true, () => {
    const result = App.run(gcx, ["sandbox", "--fault", "nonsense"], { cwd: app })
    return result.code === 2 && result.stderr.includes("--fault") ? "" : failed(result)
  })
  await check("installed bin: gcx runner without its address exits 2 (configuration)", true, () => {
    const result = App.run(gcx, ["runner"], { cwd: app })
    return result.code === 2 && result.stderr.includes("GCX_RUNNER_ADDRESS") ? "" : failed(result)
  })

  // Other runtimes, from their npm packages: reported, never required.
  const installed = await runtimesInstalled
  // The same program over FetchHttpClient: under Bun, undici's client is the part that differs.
  Fs.writeFileSync(
    Path.join(app, "quote-fetch.mjs"),
    Fs.readFileSync(Path.join(app, "quote.mjs"), "utf8")
      .replace(
        `import { NodeHttpClient } from "@effect/platform-node"`,
        `import { FetchHttpClient } from "@effect/platform"`
      )
      .replace("NodeHttpClient.layerUndici", "FetchHttpClient.layer")
  )
  const others = [
    ["Node 22 (npm node@22): the plain ES module", "node", "quote.mjs"],
    ["Bun (npm bun): the plain ES module", "bun", "quote.mjs"],
    ["Bun (npm bun): the same over FetchHttpClient", "bun", "quote-fetch.mjs"]
  ] as const
  for (const [name, runtime, program] of others) {
    await check(name, false, () => {
      if (installed.code !== 0) return failed(installed)
      const executable = Path.join(runtimes, "node_modules", ".bin", runtime)
      const version = App.run(executable, ["--version"], { cwd: app })
      const done = completedQuote(App.run(executable, [program], { cwd: app, timeout: 60_000 }))
      return typeof done === "string" ? `${version.stdout.trim()}: ${done}` : done
    })
  }
}

try {
  await main()
} finally {
  const required = outcomes.filter((outcome) => outcome.required)
  const passed = required.filter((outcome) => outcome.ok).length
  const reported = outcomes.filter((outcome) => !outcome.required)
  console.log("")
  console.log(
    `install test: ${passed} passed, ${required.length - passed} failed` +
      (reported.length === 0
        ? ""
        : `; reported only: ${reported.map((o) => `${o.name} ${o.ok ? "ok" : "not ok"}`).join(", ")}`) +
      ` (${((performance.now() - started) / 1000).toFixed(0)} s)`
  )
  if (keep) console.log(`kept: ${work}`)
  else Fs.rmSync(work, { recursive: true, force: true })
  if (passed < required.length || required.length === 0) process.exitCode = 1
}
