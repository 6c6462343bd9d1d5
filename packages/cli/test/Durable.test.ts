/**
 * `gcx quote --durable` and `gcx batch --durable` as separate processes:
 * embedded on SQLite in a temporary file, against a sandbox in the test
 * process; the card sealed with GCX_DATA_KEY, required.
 */
import { describe, expect, layer } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { CardCipher, DurableQuotes, Embedded } from "@gcx/workflow"
import { Effect, Layer, Option, Result, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as DurableDeployment from "../src/DurableDeployment.js"
import * as DurablePoller from "../src/DurablePoller.js"
import * as ExitCode from "../src/ExitCode.js"
import * as Render from "../src/Render.js"
import { cardArgs, embeddedQuotes, envFor, expectOneErrorLine, gcx, interruptedGcx, pin, sandbox } from "./helpers.js"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-durable-test-"))
const { Cards } = TestData

/** The variables of a durable run: the sandbox, a database file of its own, a data key. */
const durableEnv = (server: Sandbox.Service, name: string) => ({
  ...envFor(server),
  GCX_DATABASE_FILE: Path.join(directory, `${name}.db`),
  GCX_DATA_KEY: randomBytes(32).toString("base64")
})

describe.concurrent("gcx --durable", () => {
  layer(sandbox({ timeScale: 0.3 }), { excludeTestServices: true })("interrupted", (it) => {
    it.effect("Ctrl-C prints the requestId and gcx result, no library warning; gcx result --wait prints the outcome", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const env = durableEnv(server, "interrupted")
        const interrupted = yield* interruptedGcx(["quote", "--durable", ...cardArgs(Cards.slow)], env, /^submitted /m)
        expect(interrupted.code).toBe(130)
        const requestId =
          /^gcx: the durable quote (\w+) was recorded and goes on; its outcome: gcx result (\w+) --wait$/m
            .exec(interrupted.stderr)
        expect(requestId, interrupted.stderr).not.toBeNull()
        expect(requestId![2]).toBe(requestId![1])
        expect(interrupted.stderr).not.toMatch(/level=WARN|effect\/cluster|No healthy runners/)
        const result = yield* gcx(["result", requestId![1]!, "--wait", "--timeout", "60"], { env })
        expect(result.code, result.stderr).toBe(0)
        expect(result.stdout).toMatch(/^completed +\w+ +actual 250\.00/m)
        const json = yield* gcx(["result", requestId![1]!, "--json"], { env })
        expect(json.code).toBe(0)
        expect(JSON.parse(json.stdout)).toMatchObject({ _tag: "Completed", quote: { actualCardValue: 250 } })
        // the outcome shown by gcx result, the card quoted again is a new quote (a new transaction)
        const again = yield* gcx(["quote", "--durable", "--json", ...cardArgs(Cards.slow)], { env })
        expect(again.code, again.stderr).toBe(0)
        const submitted: { readonly requestId: string; readonly transactionId: string } = again.stdout
          .split("\n")
          .filter((line) => line.trim() !== "")
          .map((line) => JSON.parse(line))
          .find((event) => event._tag === "Submitted")
        expect(submitted.requestId).not.toBe(requestId![1])
        const journal = yield* server.journal
        const created = Object.values(journal.transactionsByRequestId).flat()
        expect(created).toContain(submitted.transactionId)
        expect(new Set(created).size).toBe(created.length)
        const unknown = yield* gcx(["result", "f".repeat(32)], { env })
        expect(unknown.code).toBe(2)
        expectOneErrorLine(
          unknown.stderr,
          `no durable quote was submitted with requestId '${
            "f".repeat(32)
          }' in the database file ${env.GCX_DATABASE_FILE} (GCX_DATABASE_FILE)`,
          "(see gcx result --help)"
        )
      }))
  })

  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("a database of another service", (it) => {
    it.effect("a database first used with one account refuses another, exit 2, before any quote is resumed or sent", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const env = durableEnv(server, "bound")
        const first = yield* gcx(["quote", "--durable", ...cardArgs(Cards.instant)], { env })
        expect(first.code, first.stderr).toBe(0)
        const created = (yield* server.journal).requests.createQuote
        const other = { ...env, GCX_CLIENT_ID: "another-partner-client" }
        for (const args of [["quote", "--durable", ...cardArgs(Cards.instant)], ["result", "f".repeat(32)]]) {
          const refused = yield* gcx(args, { env: other })
          expect(refused.code).toBe(2)
          expectOneErrorLine(
            refused.stderr,
            `database: this database's durable quotes belong to another account (GCX_CLIENT_ID) of ${
              envFor(server).GCX_BASE_URL
            }`,
            "Use a database of its own for each service and account"
          )
          expect(refused.stderr).not.toContain("another-partner-client")
        }
        expect((yield* server.journal).requests.createQuote).toBe(created)
        // with its own settings, it opens as before
        const again = yield* gcx(["result", "f".repeat(32)], { env })
        expect(again.stderr).toContain("no durable quote was submitted")
      }))
  })

  layer(sandbox({ timeScale: 0.3 }), { excludeTestServices: true })("interrupted on the embedded sandbox", (it) => {
    it.effect("Ctrl-C with no GCX_* connection settings says the quote cannot be resumed, not 'goes on'", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        // Only the durable variables: the quote runs on the embedded sandbox, which ends with the process.
        const { GCX_DATABASE_FILE, GCX_DATA_KEY } = durableEnv(server, "interrupted-embedded")
        const interrupted = yield* interruptedGcx(
          ["quote", "--durable", ...cardArgs(Cards.slow)],
          { GCX_DATABASE_FILE, GCX_DATA_KEY },
          /^submitted /m
        )
        expect(interrupted.code).toBe(130)
        expect(interrupted.stderr).toMatch(
          /^gcx: the durable quote \w+ was recorded, but its transaction was on the embedded sandbox, which ends with this process: it cannot be resumed/m
        )
        expect(interrupted.stderr).not.toContain("goes on")
        // its database is the embedded sandbox's own: the quotes of GCX_DATABASE_FILE (a real service's)
        // are never opened, so never resumed against the embedded sandbox
        expect(Fs.existsSync(GCX_DATABASE_FILE)).toBe(false)
        expect(Fs.existsSync(DurableDeployment.sandboxDatabaseFile(GCX_DATABASE_FILE))).toBe(true)
      }))
  })

  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("embedded", (it) => {
    it.effect(
      "a database another process holds: exit 2 naming it, after SQLite's busy timeout",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const env = durableEnv(server, "held")
          // this process holds the file (SQLite's exclusive lock, as a running gcx does)
          yield* Layer.build(Embedded.layerSqlite(env.GCX_DATABASE_FILE))
          const output = yield* gcx(["quote", "--durable", ...cardArgs(Cards.success)], { env })
          expect(output.code).toBe(2)
          expectOneErrorLine(
            output.stderr,
            `database: the embedded database ${env.GCX_DATABASE_FILE} is in use by another process`
          )
        }).pipe(Effect.scoped),
      30_000
    )

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

    it.effect("batch --durable with a refused batch file: exit 2 before any database is opened or key file made", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = Path.join(directory, "refused.csv")
        Fs.writeFileSync(input, `productLineId,cardNumber,pinNumber\n1000,${Cards.success},${pin},extra\n`)
        const env = durableEnv(server, "refused-batch")
        const out = Path.join(directory, "refused-batch.jsonl")
        const output = yield* gcx(["batch", input, "--durable", "--out", out], { env })
        expect(output.code).toBe(2)
        expect(output.stderr).toContain("batch file: line 2: 4 fields where the header names 3")
        expect(Fs.existsSync(env.GCX_DATABASE_FILE)).toBe(false)
        expect(Fs.existsSync(out)).toBe(false)
        expect(Fs.existsSync(`${out}.key`)).toBe(false)
      }))

    it.effect("batch --durable whose deployment is refused leaves no new key file (exit 2)", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = Path.join(directory, "good.csv")
        Fs.writeFileSync(input, `productLineId,cardNumber,pinNumber\n1000,${Cards.success},${pin}\n`)
        const { GCX_DATA_KEY: _, ...env } = durableEnv(server, "refused-deployment")
        const out = Path.join(directory, "refused-deployment.jsonl")
        const output = yield* gcx(["batch", input, "--durable", "--out", out], { env })
        expect(output.code).toBe(2)
        expect(output.stderr).toContain("GCX_DATA_KEY")
        expect(Fs.existsSync(out)).toBe(false)
        expect(Fs.existsSync(`${out}.key`)).toBe(false)
      }))

    it.effect("--durable without GCX_DATA_KEY is a configuration error that names it (exit 2)", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const { GCX_DATA_KEY: _, ...env } = durableEnv(server, "nokey")
        const output = yield* gcx(["quote", "--durable", ...cardArgs(Cards.success)], { env })
        expect(output.code).toBe(2)
        expect(output.stderr).toContain("GCX_DATA_KEY")
      }))

    it.effect("--durable with an all-zero GCX_DATA_KEY, or a GCX_DATA_KEY_PREVIOUS of one repeated byte: exit 2, one line naming it", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const repeated = (byte: number) => Buffer.alloc(32, byte).toString("base64")
        const [zero, previous] = yield* Effect.all([
          gcx(["quote", "--durable", ...cardArgs(Cards.success)], {
            env: { ...durableEnv(server, "zerokey"), GCX_DATA_KEY: repeated(0) }
          }),
          gcx(["quote", "--durable", ...cardArgs(Cards.success)], {
            env: { ...durableEnv(server, "previouskey"), GCX_DATA_KEY_PREVIOUS: repeated(0x5a) }
          })
        ], { concurrency: 2 })
        expect([zero.code, previous.code]).toEqual([2, 2])
        expectOneErrorLine(zero.stderr, "GCX_DATA_KEY must not be one byte repeated")
        expectOneErrorLine(previous.stderr, "GCX_DATA_KEY_PREVIOUS must not be one byte repeated")
      }))

    it.effect("a card no data key opens: CardDecryptionError through the durable poller, exit 2 with its own line, never the service's refusal", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = { cardNumber: Cards.success, pinNumber: pin, productLineId: TestData.defaultProductLineId }
        const requestId = randomBytes(16).toString("hex")
        const other = yield* CardCipher.make(Result.getOrThrow(CardCipher.parseKey(CardCipher.generateKey())))
        const error = yield* Effect.gen(function*() {
          // the quote is submitted by a node with another data key: the runner here cannot open its card
          const elsewhere = yield* DurableQuotes.make().pipe(
            Effect.provideService(CardCipher.CardCipher, other),
            Effect.orDie
          )
          const poller = yield* DurablePoller.durablePoller().pipe(
            Effect.provideService(DurableQuotes.DurableQuotes, elsewhere)
          )
          return yield* Effect.flip(poller.getQuote(input, { requestId }))
        }).pipe(
          Effect.provide(
            Embedded.layerQuotes({ filename: Path.join(directory, "unreadable.db") }).pipe(
              Layer.provide(CardCipher.layer(CardCipher.generateKey())),
              Layer.provide(ExchangeClient.layerWith(Sandbox.clientOptions(server))),
              Layer.provide(FetchHttpClient.layer),
              Layer.orDie
            )
          )
        )
        expect(error._tag).toBe("CardDecryptionError")
        const { code, line } = ExitCode.ofFailure(error, "quote")
        expect(code).toBe(2)
        const text = Option.getOrThrow(line)
        expect(text).toMatch(
          /^the sealed card could not be opened \(CardDecryptionError\): the card of quote \w+ was sealed/
        )
        expect(text).toContain("set GCX_DATA_KEY_PREVIOUS to that key")
        expect(text).not.toContain("the service refused")
      }).pipe(Effect.scoped))
  })

  // a sandbox of its own: its faults would reach the other tests' POSTs
  layer(sandbox({ timeScale: 0.3 }), { excludeTestServices: true })("a POST whose answers are lost", (it) => {
    it.effect("the workflow's pause before it sends the POST again is shown as a Retrying line, before Submitted", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = { cardNumber: Cards.instant, pinNumber: pin, productLineId: TestData.defaultProductLineId }
        yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer", times: 4 }])
        const events = yield* Effect.flatMap(
          DurablePoller.durablePoller(),
          (poller) => Stream.runCollect(poller.quote(input))
        ).pipe(
          Effect.provide(
            embeddedQuotes(server, Path.join(directory, "lost-answers.db"), CardCipher.generateKey(), ["100 millis"])
          ),
          Effect.ensuring(server.setFaults([]))
        )
        // every retry is shown: the first run's (attempts 2 to 4), then the pause (attempt 5)
        expect(events.map((event) => event._tag)).toEqual([
          ...Array<string>(4).fill("Retrying"),
          "Submitted",
          "Completed"
        ])
        const retries = events.filter((event) => event._tag === "Retrying").map(Render.retryText)
        expect(retries.map((line) => line.replace(/ in .*:/, ":"))).toEqual(
          [2, 3, 4, 5].map((attempt) => `attempt ${attempt}: TransportError`)
        )
        // the pause: its setting, up to a fifth longer at random
        expect(retries[3]).toMatch(/^attempt 5 in 1(0\d|1\d|20) ms: TransportError$/)
        const journal = yield* server.journal
        expect(Object.values(journal.transactionsByRequestId).flat()).toEqual([events[4]!.transactionId])
      }).pipe(Effect.scoped))
  })
})
