/**
 * `gcx quote --durable` and `gcx batch --durable` as separate processes:
 * embedded on SQLite in a temporary file, against a sandbox in the test
 * process; the card sealed with GCX_DATA_KEY, required.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { cardArgs, envFor, gcx, pin, sandbox } from "./helpers.js"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-durable-test-"))
const { Cards } = TestData

/** The variables of a durable run: the sandbox, a database file of its own, a data key. */
const durableEnv = (server: Sandbox.Service, name: string) => ({
  ...envFor(server),
  GCX_DATABASE_FILE: Path.join(directory, `${name}.db`),
  GCX_DATA_KEY: randomBytes(32).toString("base64")
})

describe.concurrent("gcx --durable", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("embedded", (it) => {
    it.effect("quote --durable goes through the workflow: one transaction for its requestId, the quote printed", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* gcx(["quote", "--durable", ...cardArgs(Cards.success)], {
          env: durableEnv(server, "quote")
        })
        expect(output.code).toBe(0)
        expect(output.stdout).toMatch(/^submitted +\w+ +card \*\*\*\*0001/m)
        expect(output.stdout).toMatch(/^completed +\w+ +actual 100\.00 +exchange 85\.00/m)
        const transactionId = /^completed +(\w+)/m.exec(output.stdout)![1]!
        const journal = yield* server.journal
        const requestIds = Object.entries(journal.transactionsByRequestId)
          .filter(([, transactions]) => transactions.includes(transactionId))
        expect(requestIds.map(([, transactions]) => transactions)).toEqual([[transactionId]])
        // The database (its file and its write-ahead log) holds the quote, sealed: no PIN, no full card number.
        const stored = Buffer.concat(
          Fs.readdirSync(directory).filter((name) => name.startsWith("quote.db")).map((name) =>
            Fs.readFileSync(Path.join(directory, name))
          )
        )
        expect(stored.includes("****0001")).toBe(true)
        expect(stored.includes(pin)).toBe(false)
        expect(stored.includes(Cards.success)).toBe(false)
      }))

    it.effect("batch --durable quotes every card through the workflow; card outcomes are counted as without it", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = Path.join(directory, "cards.csv")
        Fs.writeFileSync(
          input,
          [
            "productLineId,cardNumber,pinNumber",
            `1000,${Cards.success},${pin}`,
            `1000,${Cards.instant},${pin}`,
            `1000,${Cards.invalid},${pin}`
          ].join("\n") + "\n"
        )
        const output = yield* gcx(["batch", input, "--durable"], { env: durableEnv(server, "batch") })
        expect(output.code).toBe(3)
        expect(output.stdout).toMatch(/summary\n {2}completed +2\n/)
        expect(output.stdout).toMatch(/ {2}exchange\.invalid\.card +1\n/)
      }))

    it.effect("--durable without GCX_DATA_KEY is a configuration error that names it (exit 2)", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const { GCX_DATA_KEY: _, ...env } = durableEnv(server, "nokey")
        const output = yield* gcx(["quote", "--durable", ...cardArgs(Cards.success)], { env })
        expect(output.code).toBe(2)
        expect(output.stderr).toContain("GCX_DATA_KEY")
      }))
  })
})
