/**
 * Where gcx writes, as separate processes: a stdout closed early (`| head`)
 * ends the output quietly and a batch still finishes its cards with its
 * results file whole; logs go to stderr, never into `--json`; `--log-level`
 * is accepted after the subcommand; help written to a file, or with
 * `NO_COLOR` on a terminal, holds no ANSI code.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { QuoteEvent } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as BatchResults from "../src/BatchResults.js"
import {
  cardArgs,
  entries,
  envFor,
  expectNoSecrets,
  gcx,
  gcxClosingStdout,
  gcxInProcess,
  lines,
  pin,
  sandbox,
  spawn
} from "./helpers.js"

const decodeEvent = Schema.decodeUnknownSync(Schema.fromJsonString(QuoteEvent.QuoteEvent))
const decodeHeader = Schema.decodeUnknownSync(Schema.fromJsonString(BatchResults.Header))
const decodeResult = Schema.decodeUnknownSync(Schema.fromJsonString(BatchResults.Result))
const stackTrace = /\n\s+at .+:\d+:\d+/

describe.concurrent("gcx output streams", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("against a sandbox", (it) => {
    it.effect("quote --json | head -1 ends quietly with the quote's exit code", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        // the slow card takes 1.5 s: many Progress lines are written after stdout is gone
        const output = yield* gcxClosingStdout(
          ["quote", ...cardArgs(TestData.Cards.slow), "--json", "--poll-interval", "20"],
          { env: envFor(server), lines: 1 }
        )
        expectNoSecrets(output)
        expect(output.signal).toBeNull()
        expect(output.code).toBe(0)
        expect(decodeEvent(lines(output.stdout)[0])._tag).toBe("Submitted")
        expect(output.stderr).not.toMatch(stackTrace)
        expect(output.stderr).not.toContain("EPIPE")
        expect(output.stderr).toBe("")
      }))
  })

  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("a batch on a sandbox of its own", (it) => {
    it.effect("batch | head -3 finishes its cards; its results file is whole", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-epipe-test-"))
        const file = Path.join(directory, "cards.csv")
        const cards = ["0001", "0019", "0035", "0043", "0050", "0068", "0076"].map((end) => `600600000000${end}`)
        Fs.writeFileSync(
          file,
          ["cardNumber,pinNumber,productLineId", ...cards.map((card) => `${card},${pin},1000`)].join("\n")
        )
        const out = Path.join(directory, "results.jsonl")
        const output = yield* gcxClosingStdout(["batch", file, "--out", out, "--concurrency", "1"], {
          env: envFor(server),
          lines: 3
        })
        expectNoSecrets(output)
        expect(output.signal).toBeNull()
        expect(output.stderr).not.toMatch(stackTrace)
        expect([0, 3, 4, 5]).toContain(output.code)
        expect((yield* server.journal).requests.createQuote).toBe(7)
        const [header, ...results] = lines(Fs.readFileSync(out, "utf8"))
        decodeHeader(header)
        expect(results.map((line) => decodeResult(line).line).sort()).toEqual([2, 3, 4, 5, 6, 7, 8])
      }), 150_000)
  })

  const retried = sandbox({ timeScale: 0.05, faults: [{ route: "getTransaction", kind: "status503", times: 5 }] })
  layer(retried, { excludeTestServices: true })("GETs answered 503 five times (past the client's 4 attempts)", (it) => {
    it.effect("--log-level debug after the subcommand: logs on stderr, stdout only events", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* gcx(["quote", ...cardArgs(TestData.Cards.success), "--json", "--log-level", "debug"], {
          env: envFor(server)
        })
        expect(output.code).toBe(0)
        const events = lines(output.stdout).map((line) => decodeEvent(line))
        expect(events.at(-1)?._tag).toBe("Completed")
        // the client's own retries are logged (debug); the poller's retry is an event
        expect(events.filter((event) => event._tag === "Retrying").length).toBeGreaterThanOrEqual(1)
        expect(output.stderr).toMatch(/level=DEBUG/)
        expect(output.stdout).not.toContain("level=")
      }))
  })

  layer(retried, { excludeTestServices: true })(
    "GETs answered 503 five times (past the client's 4 attempts), on a pipe",
    (it) => {
      it.effect("every retry is shown with its attempt and a readable delay", () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const output = yield* gcx(["quote", ...cardArgs(TestData.Cards.success)], { env: envFor(server) })
          expect(output.code).toBe(0)
          const retries = lines(output.stdout).filter((line) => line.startsWith("retrying"))
          expect(retries.length).toBeGreaterThanOrEqual(1)
          for (const line of retries) expect(line).toMatch(/ attempt \d+ in (\d+ ms|\d+(\.\d)? s): /)
        }))
    }
  )
})

describe("help", () => {
  it.live("help on a file or a pipe, or with NO_COLOR on a terminal, holds no ANSI code; on a terminal it has colours", () =>
    Effect.gen(function*() {
      const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-help-test-"))
      const helpFile = Path.join(directory, "help.txt")
      const command = [process.execPath, "--import", "tsx", entries.bin, "--help"].join(" ")
      const inTerminal = (env: Record<string, string>) =>
        spawn("script", ["--quiet", "--flush", "--return", "--command", command, "/dev/null"], { env })
      const [file, piped, plain, coloured] = yield* Effect.all([
        spawn("sh", ["-c", `${command} > ${helpFile}`]),
        gcx(["quote", "--help"]),
        inTerminal({ NO_COLOR: "1" }),
        inTerminal({})
      ], { concurrency: "unbounded" })
      expect(file.code).toBe(0)
      const written = Fs.readFileSync(helpFile, "utf8")
      expect(written).toContain("USAGE")
      expect(written).not.toContain("\u001b")
      expect(piped.stdout).toContain("GCX_CLIENT_SECRET")
      expect(piped.stdout).not.toContain("\u001b")
      expect(plain.stdout).toContain("USAGE")
      expect(plain.stdout).not.toContain("\u001b")
      expect(coloured.stdout).toContain("\u001b[")
    }))

  it.live("each command's help lists the GCX_* variables, the secret and key names, and the exit codes", () =>
    Effect.gen(function*() {
      for (const command of ["heartbeat", "quote", "watch", "batch"]) {
        const output = yield* gcxInProcess([command, "--help"])
        expect(output.code).toBe(0)
        for (const name of ["GCX_BASE_URL", "GCX_AUTH_URL", "GCX_CLIENT_ID", "GCX_CLIENT_SECRET", "GCX_API_KEY"]) {
          expect(output.stdout, `${command} --help names ${name}`).toContain(name)
        }
        expect(output.stdout).toContain("EXIT CODES")
        for (const code of ["0", "2", "3", "4", "5", "130"]) expect(output.stdout).toMatch(new RegExp(`^${code}$`, "m"))
      }
      expect((yield* gcxInProcess(["batch", "--help"])).stdout).toContain("GCX_BATCH_KEY")
      expect((yield* gcxInProcess(["sandbox", "--help"])).stdout).toContain("EXIT CODES")
    }))
})
