/**
 * The installed `gcx` bin on one Node runtime: its version and compile cache, each command's help,
 * and a run of each command's handler (each a module of the bundle evaluated only when its command
 * runs), `quote --durable` embedded on SQLite and client-only on the runners of a PostgreSQL, and
 * `gcx result` of each.
 */
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { check, completedQuote, failed, lastLine } from "./Checks.js"
import type { Postgres } from "./Postgres.js"
import type { Result } from "./Process.js"
import { freePort, run, startService } from "./Process.js"
import type { NodeRuntime } from "./Runtimes.js"
import { environmentOn } from "./Runtimes.js"

export interface Options {
  readonly app: string
  readonly runtime: NodeRuntime
  /** The version the cli package has, which `gcx --version` must print. */
  readonly version: string | undefined
  /** The PostgreSQL of the client-only check; none fails that check. */
  readonly postgres: () => Promise<Postgres>
}

const card = ["--card", "6006000000000019", "--pin", "1234", "--product", "1000"]

/** The files of a bundle that `file` imports (or re-exports from) statically, itself included: what a start reads. */
const startFiles = (file: string, reached = new Set<string>()): Set<string> => {
  if (reached.has(file)) return reached
  reached.add(file)
  for (
    const [, imported] of Fs.readFileSync(file, "utf8").matchAll(
      /\b(?:import|export)\s*(?:[^;"()]*?\bfrom\s*)?"(\.\.?\/[^"]+)"/g
    )
  ) {
    startFiles(Path.resolve(Path.dirname(file), imported!), reached)
  }
  return reached
}

export const checks = async ({ app, postgres, runtime, version }: Options): Promise<void> => {
  const on = `on Node ${runtime.major}`
  const gcx = Path.join(app, "node_modules", ".bin", "gcx")
  // the bin's compile cache goes to the application's folder, not the user's
  const cache = Path.join(app, `.cache-node${runtime.major}`)
  // no GCX_* setting of the shell that runs the test: the embedded sandbox, a data key of the run's own
  const env = (extra: Record<string, string> = {}) => {
    const base = environmentOn(runtime, { XDG_CACHE_HOME: cache, GCX_DATA_KEY: dataKey, ...extra })
    for (const name of Object.keys(base)) {
      if (name.startsWith("GCX_") && !(name in extra) && name !== "GCX_DATA_KEY") delete base[name]
    }
    return base
  }
  const dataKey = randomBytes(32).toString("base64")
  const gcxRun = (args: ReadonlyArray<string>, extra: Record<string, string> = {}, timeout = 60_000): Result =>
    run(gcx, args, { cwd: app, env: env(extra), timeout })

  /** `gcx result <requestId> --wait --json` of the quote a `--json` run printed: its outcome again. */
  const resultOf = (quoted: Result, node: Record<string, string>) => {
    const submitted = quoted.stdout.split("\n").find((line) => line.includes(`"_tag":"Submitted"`))
    const requestId = submitted === undefined ? undefined : JSON.parse(submitted).requestId
    if (typeof requestId !== "string") return failed(quoted)
    const read = gcxRun(["result", requestId, "--wait", "--json", "--embedded"], node, 120_000)
    // a client-only node says it reads the quotes of its database: it submits nothing
    if (
      node.GCX_DATABASE_URL !== undefined &&
      !/^gcx: client-only, reading the durable quotes of PostgreSQL /m.test(read.stderr)
    ) {
      return failed(read)
    }
    const done = completedQuote(read)
    return typeof done === "string" ? `gcx result ${requestId}: ${done}` : done
  }

  await check(`installed bin ${on}: gcx --version, compile cache written`, true, () => {
    const result = gcxRun(["--version"])
    if (result.code !== 0) return failed(result)
    const printed = result.stdout.trim()
    // Node's compile cache (module.enableCompileCache), in $XDG_CACHE_HOME/gcx
    const folder = Path.join(cache, "gcx")
    const cached = Fs.existsSync(folder) &&
      Fs.readdirSync(folder, { recursive: true, withFileTypes: true }).some((entry) => entry.isFile())
    if (!cached) return { fail: "no compile cache was written" }
    return printed === version ? printed : { fail: `printed ${printed}, package is ${version}` }
  })
  // What a start evaluates (scripts/bundle-cli.ts, Lazy.layerNodeServices): a probe preloaded into the
  // bin's process counts the `Intl.Segmenter`s made and lists which of Node's modules that only some
  // commands use (`node:child_process`, `node:crypto`, `node:readline`) were loaded.
  const probe = Path.join(app, "start-probe.cjs")
  Fs.writeFileSync(
    probe,
    `const Segmenter = Intl.Segmenter; let made = 0
Intl.Segmenter = class extends Segmenter { constructor(...args) { super(...args); made++ } }
process.on("exit", () => process.stderr.write("\\nstart-probe " + JSON.stringify({
  segmenters: made,
  builtins: ["child_process", "crypto", "readline"].filter((name) => process.moduleLoadList.includes("NativeModule " + name))
}) + "\\n"))
`
  )
  const probed = (args: ReadonlyArray<string>) => {
    const result = gcxRun(args, { NODE_OPTIONS: `--require ${probe}` })
    const line = /^start-probe (.+)$/m.exec(result.stderr)
    return { result, probe: line === null ? undefined : JSON.parse(line[1]!) as Record<string, unknown> }
  }
  await check(
    `installed bin ${on}: gcx --version reads the entry and one chunk, makes no Intl.Segmenter, and loads no node:child_process, node:crypto nor node:readline`,
    true,
    () => {
      const bundle = Path.join(app, "node_modules", "@gcx", "cli", "dist", "gcx")
      const files = [...startFiles(Path.join(bundle, "gcx.mjs"))].map((file) => Path.relative(bundle, file))
      if (files.length !== 2) return { fail: `a start reads ${files.length} files: ${files.join(", ")}` }
      const version = probed(["--version"])
      const help = probed(["--help"])
      if (version.result.code !== 0 || help.result.code !== 0) {
        return failed(
          version.result.code !== 0 ? version.result : help.result
        )
      }
      const expected = { segmenters: 0, builtins: [] }
      if (JSON.stringify(version.probe) !== JSON.stringify(expected)) {
        return {
          fail: `--version: ${JSON.stringify(version.probe)}`
        }
      }
      // help measures its text, so it makes the segmenter: the probe sees one when there is one
      if (help.probe?.segmenters !== 1) return { fail: `--help: ${JSON.stringify(help.probe)}` }
      return `--version reads ${files.join(" and ")}, ${
        JSON.stringify(version.probe)
      }; --help made ${help.probe.segmenters} segmenter`
    }
  )
  await check(
    `installed bin ${on}: gcx quote --embedded --json (last line Completed)`,
    true,
    () => completedQuote(gcxRun(["quote", "--embedded", "--json", ...card]))
  )
  for (const command of ["heartbeat", "quote", "watch", "batch", "result", "sandbox", "runner"]) {
    await check(`installed bin ${on}: gcx ${command} --help`, true, () => {
      const result = gcxRun([command, "--help"])
      const named = result.stdout.includes(`gcx ${command} `)
      return result.code === 0 && named ? "" : failed(result)
    })
  }
  await check(`installed bin ${on}: gcx heartbeat --embedded --json`, true, () => {
    const result = gcxRun(["heartbeat", "--embedded", "--json"])
    if (result.code !== 0) return failed(result)
    return JSON.parse(lastLine(result.stdout)).ok === true ? lastLine(result.stdout) : failed(result)
  })
  await check(`installed bin ${on}: gcx watch of an unknown transaction exits 2 (TransactionNotFound)`, true, () => {
    const result = gcxRun(["watch", "00000000-0000-0000-0000-000000000000", "--embedded"])
    return result.code === 2 && result.stderr.includes("TransactionNotFound") ? lastLine(result.stderr) : failed(result)
  })
  await check(`installed bin ${on}: gcx batch --embedded --json of two cards`, true, () => {
    Fs.writeFileSync(
      Path.join(app, "cards.csv"),
      "cardNumber,pinNumber,productLineId\n6006000000000019,1234,1000\n6006000000000035,1234,1000\n"
    )
    const result = gcxRun(["batch", "cards.csv", "--embedded", "--json"])
    const statuses = result.stdout.trim().split("\n").map((line) => JSON.parse(line).status).sort()
    // the invalid card fails as a card outcome: exit code 3
    return result.code === 3 && statuses.join(" ") === "completed failed" ? statuses.join(", ") : failed(result)
  })
  await check(`installed bin ${on}: gcx sandbox with a bad --fault rule exits 2`, true, () => {
    const result = gcxRun(["sandbox", "--fault", "nonsense"])
    return result.code === 2 && result.stderr.includes("--fault") ? "" : failed(result)
  })
  await check(`installed bin ${on}: gcx runner without its address exits 2 (configuration)`, true, () => {
    const result = gcxRun(["runner"], { GCX_DATABASE_URL: "postgres://gcx@127.0.0.1:9/gcx" })
    return result.code === 2 && result.stderr.includes("GCX_RUNNER_ADDRESS") ? "" : failed(result)
  })
  await check(
    `installed bin ${on}: gcx quote --durable --embedded --json, embedded on SQLite; gcx result`,
    true,
    () => {
      const node = { GCX_DATABASE_FILE: Path.join(app, `durable-node${runtime.major}`, "gcx.db") }
      const quoted = gcxRun(["quote", "--durable", "--embedded", "--json", ...card], node, 120_000)
      const done = completedQuote(quoted)
      return typeof done === "string" ? resultOf(quoted, node) : done
    }
  )
  await check(
    `installed bin ${on}: gcx quote --durable --embedded --json, client-only on a gcx runner over PostgreSQL`,
    true,
    async () => {
      const { url } = await postgres()
      const port = await freePort()
      // one machine: both nodes on plain TCP over loopback (the TLS transport is proved by test:cluster)
      const node = { GCX_DATABASE_URL: url, GCX_RUNNER_INSECURE_LOOPBACK: "true" }
      // the runner quotes against its own embedded sandbox; the client-only node submits and awaits
      const runner = await startService(
        gcx,
        ["runner", "--embedded", "--insecure-loopback"],
        /running durable quotes/,
        {
          cwd: app,
          env: env({ ...node, GCX_RUNNER_ADDRESS: `127.0.0.1:${port}` }),
          timeout: 120_000
        }
      )
      try {
        const quoted = gcxRun(["quote", "--durable", "--embedded", "--json", ...card], node, 120_000)
        const done = completedQuote(quoted)
        if (typeof done !== "string") return { fail: `${done.fail}\nrunner:\n${runner.output().trim()}` }
        // a client-only node says where it submits, and shows the runner's events (Submitted) before the outcome
        // … and, with its runner alive, not that its quotes wait for one
        if (
          !/^gcx: --durable: client-only, submitting to the runners of PostgreSQL /m.test(quoted.stderr) ||
          quoted.stderr.includes("gcx: no runner of")
        ) {
          return failed(quoted)
        }
        if (!quoted.stdout.split("\n").some((line) => line.includes(`"_tag":"Submitted"`))) return failed(quoted)
        return resultOf(quoted, node)
      } finally {
        await runner.stop()
      }
    }
  )
}
