/**
 * Every code block of README.md and docs/ marked runnable runs, as written, against a sandbox, so
 * that the docs cannot drift from the code.
 *
 * The marker is the fence's info string: ```` ```ts runnable ```` (GitHub still highlights it as
 * `ts`). A block must be a whole program; it runs in its own process (`node --import tsx`, the
 * sources of the @gcx packages), in a fresh temporary folder, with the `GCX_*` variables of an
 * in-process sandbox and a throwaway `GCX_DATA_KEY`, and must exit 0 within 60 s. When the next fenced block is a ```` ```text output ```` one, it holds lines the
 * program must print, in that order. A runnable block in any other language fails: the marker is never ignored.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it, layer } from "@effect/vitest"
import { Sandbox } from "@gcx/sandbox"
import { Duration, Effect, Layer, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** A runnable block: where it is, its language and code, and the output it documents. */
interface Snippet {
  readonly file: string
  readonly line: number
  readonly language: string
  readonly code: string
  readonly output: ReadonlyArray<string>
}

const fence = /^```(\w*)[ \t]+runnable[ \t]*\n([\s\S]*?)^```[ \t]*$/gm
/** The next fenced block after a runnable one, when it is a ```` ```text output ```` block. */
const outputFence = /^```(.*)\n([\s\S]*?)^```/m

/** The runnable blocks of one markdown file. */
const snippetsOf = (file: string): ReadonlyArray<Snippet> => {
  const text = Fs.readFileSync(Path.join(root, file), "utf8")
  return [...text.matchAll(fence)].map((match) => {
    const next = outputFence.exec(text.slice(match.index + match[0].length))
    const output = next !== null && /^text[ \t]+output[ \t]*$/.test(next[1]!) ? next[2]! : ""
    return {
      file,
      line: text.slice(0, match.index).split("\n").length,
      language: match[1]!,
      code: match[2]!,
      output: output.split("\n").filter((line) => line.trim() !== "")
    }
  })
}

/** README.md and every page under docs/. */
const markdownFiles = [
  "README.md",
  ...Fs.readdirSync(Path.join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".md"))
    .map((file) => Path.join("docs", file))
    .sort()
]

const snippets = markdownFiles.flatMap(snippetsOf)

/** Where the blocks are written to run: inside examples/, so that they import the @gcx packages as examples do. */
const directory = Path.join(root, "examples", "build", "snippets")

/** The environment of the tests without a `GCX_*` variable, plus the sandbox's. */
const environment = (variables: Record<string, string>): Record<string, string> => {
  const inherited = Object.entries(process.env).filter(([name, value]) =>
    !name.startsWith("GCX_") && value !== undefined
  ) as Array<[string, string]>
  return { ...Object.fromEntries(inherited), ...variables }
}

/** tsx's loader, by URL: the blocks run in a folder outside the workspace. */
const tsx = pathToFileURL(Path.join(root, "node_modules", "tsx", "dist", "loader.mjs")).href

/** A throwaway data key for the durable blocks (`GCX_DATA_KEY`), as their database is throwaway too. */
const dataKey = Crypto.randomBytes(32).toString("base64")

/** Runs one block in its own process, in a folder of its own; gives its exit code and output. */
const run = Effect.fn("run")(function*(snippet: Snippet, variables: Record<string, string>) {
  const file = Path.join(directory, `${snippet.file.replace(/\W/g, "_")}-${snippet.line}.ts`)
  Fs.mkdirSync(directory, { recursive: true })
  Fs.writeFileSync(file, snippet.code)
  // a fresh working folder: the files a block writes (a journal, a database) start empty and go
  const cwd = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-snippet-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(cwd, { recursive: true, force: true })))
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  const handle = yield* spawner.spawn(
    ChildProcess.make(process.execPath, ["--import", tsx, file], {
      cwd,
      env: environment({ ...variables, GCX_DATA_KEY: dataKey }),
      extendEnv: false
    })
  )
  const [stdout, stderr, exitCode] = yield* Effect.all([
    Stream.mkString(Stream.decodeText(handle.stdout)),
    Stream.mkString(Stream.decodeText(handle.stderr)),
    handle.exitCode
  ], { concurrency: "unbounded" })
  return { stdout, stderr, exitCode }
}, Effect.scoped)

/** The sandbox the blocks run against, at a quarter of real time, quiet. */
const SandboxLive = Sandbox.layer({ timeScale: 0.25, logLevel: "None" })

describe("the runnable blocks of README.md and docs/", () => {
  it("include the README's minimal program and its events example", () => {
    const readme = snippets.filter((snippet) => snippet.file === "README.md")
    expect(readme.length).toBeGreaterThanOrEqual(2)
    const minimal = readme.find((snippet) => snippet.code.includes("poller.getQuote"))
    expect(minimal?.output).toEqual(["balance 100.00, offered 85.00"])
    expect(readme.some((snippet) => snippet.code.includes("bus.subscribe"))).toBe(true)
  })

  it("the README's Telemetry install line names every optional peer of @gcx/http but platform-node, at gcx's range", () => {
    const readme = Fs.readFileSync(Path.join(root, "README.md"), "utf8")
    const block = /`@gcx\/http\/Telemetry`[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? ""
    const named = block.replace(/\\\n/g, " ").split(/\s+/).filter((word) => word.includes("@", 1)).sort()
    const manifest = JSON.parse(Fs.readFileSync(Path.join(root, "packages", "http", "package.json"), "utf8"))
    // @effect/platform-node (for `@gcx/http/UndiciClient`) is in the main install line, which the next test checks.
    const optional = Object.entries<string>(manifest.peerDependencies)
      .filter(([name]) => manifest.peerDependenciesMeta?.[name]?.optional === true && name !== "@effect/platform-node")
      .map(([name, range]) => `${name}@${range}`)
      .sort()
    expect(optional.length).toBeGreaterThan(0)
    expect(named).toEqual(optional)
  })

  it("the README's main install line names @effect/platform-node, which @gcx/http/UndiciClient needs", () => {
    const readme = Fs.readFileSync(Path.join(root, "README.md"), "utf8")
    const line = /```sh\n(npm i @gcx\/core [^\n]*)\n/.exec(readme)?.[1] ?? ""
    expect(line.split(/\s+/)).toEqual(expect.arrayContaining(["@gcx/http", "@effect/platform-node"]))
    const manifest = JSON.parse(Fs.readFileSync(Path.join(root, "packages", "http", "package.json"), "utf8"))
    expect(manifest.peerDependenciesMeta["@effect/platform-node"]).toEqual({ optional: true })
  })

  it("are all TypeScript", () => {
    for (const snippet of snippets) expect(`${snippet.file}:${snippet.line} ${snippet.language}`).toMatch(/ ts$/)
  })

  layer(Layer.merge(SandboxLive, NodeServices.layer), { excludeTestServices: true, timeout: 60_000 })(
    "against a sandbox",
    (it) => {
      for (const snippet of snippets) {
        it.effect(`${snippet.file}:${snippet.line} runs and prints what the docs show`, () =>
          Effect.gen(function*() {
            const server = yield* Sandbox.SandboxServer
            const result = yield* run(snippet, Sandbox.environment(server)).pipe(Effect.timeout(Duration.seconds(60)))
            expect(result.exitCode, result.stderr).toBe(0)
            const printed = result.stdout.split("\n")
            let from = 0
            for (const line of snippet.output) {
              const at = printed.indexOf(line, from)
              expect(at, `${snippet.file}:${snippet.line} should print ${line}\n${result.stdout}`)
                .toBeGreaterThanOrEqual(0)
              from = at + 1
            }
          }), { timeout: 70_000 })
      }
    }
  )
})
