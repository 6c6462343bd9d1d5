/**
 * `docs/durable.md`'s "Run it", as written: its blocks marked `<!-- doc-test: name -->` run in order in
 * one bash, with `gcx` on PATH (the repository's sources), on a throwaway PostgreSQL, against a sandbox
 * in this process. Only what a reader's machine decides differs: the sandbox's port (4010), the runners'
 * ports (34431, 34432) and the database URL are replaced by free ones. Then what an operator should see
 * is checked: the embedded and client-only quotes completed with their events, the client-only node
 * naming its database, Ctrl-C printing the requestId and `gcx result --wait` the outcome, the second
 * runner acquiring shards and resuming the slow quote after the first was killed, and exactly one
 * transaction per quote in the sandbox's journal.
 */
import { describe, expect, it } from "@effect/vitest"
import { Sandbox } from "@gcx/sandbox"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Postgres from "../utils/postgres.js"
import { rootDir } from "./processes.js"

/** The blocks of a markdown text marked `<!-- doc-test: name -->`, in order. */
export const markedBlocks = (markdown: string): ReadonlyArray<{ readonly name: string; readonly code: string }> =>
  Array.from(
    markdown.matchAll(/<!-- doc-test: ([\w-]+) -->\n```sh\n([\s\S]*?)```/g),
    (match) => ({ name: match[1]!, code: match[2]! })
  )

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Runs `script` in bash in `cwd` (its own process group, killed at the end or after `timeoutMs`). */
const bash = (script: string, cwd: string, env: Record<string, string>, timeoutMs: number) =>
  Effect.callback<{ readonly code: number | null; readonly output: string }>((resume) => {
    const child = ChildProcess.spawn("bash", ["-euo", "pipefail", "-c", script], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // already gone
      }
    }
    const timer = setTimeout(killGroup, timeoutMs)
    child.on("close", (code) => {
      clearTimeout(timer)
      killGroup() // runners the script left behind after a failure
      resume(Effect.succeed({ code, output }))
    })
    return Effect.sync(killGroup)
  })

describe("docs/durable.md", () => {
  it.live(
    "its Run it commands run as written: embedded, client-only, Ctrl-C and gcx result, two runners and a kill",
    () =>
      Effect.gen(function*() {
        const markdown = fs.readFileSync(path.join(rootDir, "docs/durable.md"), "utf8")
        const blocks = markedBlocks(markdown)
        expect(blocks.map((block) => block.name)).toEqual([
          "service",
          "data-key",
          "embedded",
          "certificates",
          "database",
          "client-only",
          "result",
          "failover"
        ])
        const database = yield* Postgres.make()
        const server = yield* Sandbox.make({ logLevel: "None", port: 0 })
        const [runner1, runner2] = yield* Effect.promise(() => Promise.all([freePort(), freePort()]))
        const sandboxPort = new URL(server.baseUrl).port
        const script = blocks.map((block) => `echo "=== ${block.name}"\n${block.code}`).join("\n")
          .replaceAll("127.0.0.1:4010", `127.0.0.1:${sandboxPort}`)
          .replaceAll("127.0.0.1:34431", `127.0.0.1:${runner1}`)
          .replaceAll("127.0.0.1:34432", `127.0.0.1:${runner2}`)
          .replaceAll("postgres://gcx:secret@127.0.0.1:5432/gcx", database.urlString)
        expect(script).not.toContain(":4010")

        const work = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-docs-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(work, { recursive: true, force: true })))
        const bin = path.join(work, "bin")
        fs.mkdirSync(bin)
        fs.writeFileSync(
          path.join(bin, "gcx"),
          `#!/bin/sh\nexec "${process.execPath}" --conditions=@gcx/source --import "${
            path.join(rootDir, "node_modules/tsx/dist/loader.mjs")
          }" "${path.join(rootDir, "packages/cli/src/bin.ts")}" "$@"\n`,
          { mode: 0o755 }
        )
        const env = { PATH: `${bin}:${process.env.PATH ?? ""}`, NODE_OPTIONS: "" }
        const run = yield* bash(script, work, env, 6 * 60_000)
        const file = (name: string) => fs.readFileSync(path.join(work, name), "utf8")
        const context = `${run.output}\n--- runner-2.log\n${
          fs.existsSync(path.join(work, "runner-2.log")) ? file("runner-2.log") : ""
        }`
        expect(run.code, context).toBe(0)

        const section = (name: string) => run.output.split(`=== ${name}\n`)[1]!.split("\n=== ")[0]!
        // embedded: the quote and its events
        expect(section("embedded")).toMatch(/^submitted +\w+ +card \*\*\*\*0001/m)
        expect(section("embedded")).toMatch(/^completed +\w+ +actual 100\.00/m)
        // client-only: where it submits (no password), and the runner's events
        const clientOnly = section("client-only")
        expect(clientOnly).toMatch(
          /^gcx: --durable: client-only, submitting to the runners of PostgreSQL 127\.0\.0\.1:\d+\/\w+$/m
        )
        expect(clientOnly).not.toContain("embedded sandbox")
        expect(clientOnly).toMatch(/^submitted +\w+ +card \*\*\*\*0001/m)
        expect(clientOnly).toMatch(/^(progress|step) +\w+ /m)
        expect(clientOnly).toMatch(/^completed +\w+ +actual 100\.00/m)
        // Ctrl-C: the requestId and gcx result, no library warning; gcx result --wait: the outcome
        expect(file("quote.err")).toMatch(
          /^gcx: the durable quote \w+ was recorded and goes on; its outcome: gcx result \w+ --wait$/m
        )
        expect(file("quote.err")).not.toMatch(/level=WARN|effect\/cluster/)
        expect(section("result")).toMatch(/^completed +\w+ +actual 100\.00/m)
        // two runners and a kill: runner 2 took shards over and resumed the slow quote, which completed
        expect(file("slow.out")).toMatch(/^completed +\w+ +actual 250\.00/m)
        const runner2Log = file("runner-2.log")
        expect(runner2Log).toMatch(/level=INFO .*message="acquired \d+ shards?"/)
        expect(runner2Log).toMatch(/level=INFO .*message="resuming a durable quote/)
        expect(runner2Log).toMatch(/level=INFO .*message="released \d+ shards?"/)
        // no second transaction for any requestId
        const journal = yield* server.journal
        for (const [requestId, transactions] of Object.entries(journal.transactionsByRequestId)) {
          expect(transactions, requestId).toHaveLength(1)
        }
        expect(Object.keys(journal.transactionsByRequestId).length).toBeGreaterThanOrEqual(4)
      }).pipe(Effect.scoped),
    8 * 60_000
  )
})
