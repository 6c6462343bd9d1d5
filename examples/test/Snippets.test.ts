/**
 * Every code block of README.md and docs/ marked runnable runs, as written, against a sandbox, so
 * that the docs cannot drift from the code.
 *
 * The marker is the fence's info string: ```` ```ts runnable ```` (GitHub still highlights it as
 * `ts`). A block must be a whole program; it runs in its own process (`node --import tsx`, the
 * sources of the @gcx packages) with the `GCX_*` variables of an in-process sandbox, and must exit
 * 0 within 60 s. When the next fenced block is a ```` ```text output ```` one, it holds lines the
 * program must print, in that order. A runnable block in any other language fails: the marker is never ignored.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it, layer } from "@effect/vitest"
import { Sandbox } from "@gcx/sandbox"
import { Duration, Effect, Layer, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

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

/** Runs one block in its own process; gives its exit code and output. */
const run = Effect.fn("run")(function*(snippet: Snippet, variables: Record<string, string>) {
  const file = Path.join(directory, `${snippet.file.replace(/\W/g, "_")}-${snippet.line}.ts`)
  Fs.mkdirSync(directory, { recursive: true })
  Fs.writeFileSync(file, snippet.code)
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  const handle = yield* spawner.spawn(
    ChildProcess.make(process.execPath, ["--import", "tsx", file], {
      cwd: root,
      env: environment(variables),
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
