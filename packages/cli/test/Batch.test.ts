/**
 * `gcx batch` as a separate process: CSV and JSON lines, the results file,
 * the summary, the exit code, and the resume that makes no new POST for a
 * finished card.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as BatchResults from "../src/BatchResults.js"
import { envFor, gcx, lines, pin, sandbox } from "./helpers.js"

const decodeResult = Schema.decodeUnknownSync(Schema.fromJsonString(BatchResults.Result))
const decodeHeader = Schema.decodeUnknownSync(Schema.fromJsonString(BatchResults.Header))

/** The results of a results file, after its header line. */
const readResults = (path: string) => {
  const [header, ...results] = lines(Fs.readFileSync(path, "utf8"))
  decodeHeader(header)
  return results.map((line) => decodeResult(line))
}

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-batch-test-"))
const file = (name: string, text: string) => {
  const path = Path.join(directory, name)
  Fs.writeFileSync(path, text)
  return path
}

const { Cards } = TestData

/** Six cards: two complete, two card outcomes, one merchant outcome, one refused before any I/O. */
const csv = [
  "productLineId,cardNumber,pinNumber,note",
  `1000,${Cards.success},${pin},success`,
  `2000,"${Cards.instant}",${pin},"instant, quoted"`,
  `1000,${Cards.invalid},${pin},invalid`,
  `1000,${Cards.success},0000,rejected PIN`,
  `1000,${Cards.merchantUnavailable},${pin},merchant`,
  `1000,${Cards.zeroBalance},,empty PIN`
].join("\n")

describe.concurrent("gcx batch", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("resume", (it) => {
    it.effect("quotes a CSV file, writes one result per card, prints the summary; a re-run skips finished cards", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = file("cards.csv", `${csv}\n`)
        const out = Path.join(directory, "results.jsonl")
        const args = ["batch", input, "--concurrency", "3", "--out", out]

        const first = yield* gcx(args, { env: envFor(server) })
        // the worst outcome: the empty PIN (2) outranks the merchant (4) and the card outcomes (3)
        expect(first.code).toBe(2)
        expect(first.stdout).toContain("batch: 6 card(s)")
        expect(first.stdout).toMatch(/summary\n {2}completed +2\n/)
        expect(first.stdout).toMatch(/ {2}exchange\.invalid\.card +2\n/)
        expect(first.stdout).toMatch(/ {2}exchange\.card\.merchant\.unavailable +1\n/)
        expect(first.stdout).toMatch(/ {2}InvalidCardInput +1\n/)
        expect(first.stdout).toMatch(/ {2}total +6/)
        expect(lines(first.stdout).filter((line) => /^\[\d\/6\] /.test(line))).toHaveLength(6)

        const text = Fs.readFileSync(out, "utf8")
        for (const secret of [pin, ...Object.values(Cards)]) expect(text).not.toContain(secret)
        const results = readResults(out)
        expect(results.map((result) => result.line).sort()).toEqual([2, 3, 4, 5, 6, 7])
        expect(new Set(results.map((result) => result.key)).size).toBe(6)
        const byLine = new Map(results.map((result) => [result.line, result]))
        expect(byLine.get(2)).toMatchObject({ status: "completed", card: "****0001" })
        expect(byLine.get(3)).toMatchObject({ status: "completed", card: "****0019", productLineId: "2000" })
        expect(byLine.get(4)).toMatchObject({ status: "failed", group: "card", errorCode: "exchange.invalid.card" })
        expect(byLine.get(6)).toMatchObject({ status: "failed", group: "merchant", error: "MerchantUnavailable" })
        expect(byLine.get(6)?.userMessage).toContain("try again later")
        expect(byLine.get(7)).toMatchObject({ status: "failed", group: "local", error: "InvalidCardInput" })
        expect(byLine.get(7)?.transactionId).toBeUndefined()
        const posts = (yield* server.journal).requests.createQuote
        expect(posts).toBe(5)

        const second = yield* gcx(args, { env: envFor(server) })
        expect(second.code).toBe(2)
        expect(second.stdout).toContain("4 finished earlier (skipped)")
        expect(second.stdout).toMatch(/ {2}skipped \(finished earlier\) +4\n/)
        // only the merchant outcome is quoted again (the empty PIN fails before any I/O)
        expect((yield* server.journal).requests.createQuote).toBe(posts + 1)
        expect(readResults(out).map((result) => result.line).sort()).toEqual([2, 3, 4, 5, 6, 7])
      }))
  })

  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("JSON lines", (it) => {
    it.effect("quotes a JSON-lines file; --json prints the result lines and the summary on stderr", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = file(
          "cards.jsonl",
          [
            JSON.stringify({ cardNumber: Cards.success, pinNumber: pin, productLineId: "1000" }),
            "",
            JSON.stringify({ cardNumber: "6006000000000142", pinNumber: pin, productLineId: 4000, extra: true }),
            JSON.stringify({ cardNumber: Cards.notAccepted, pinNumber: pin, productLineId: "1000" })
          ].join("\n")
        )
        const output = yield* gcx(["batch", input, "--json"], { env: envFor(server) })
        expect(output.code).toBe(3)
        const results = lines(output.stdout).map((line) => decodeResult(line))
        expect(results.map((result) => result.status).sort()).toEqual(["completed", "completed", "failed"])
        expect(results.find((result) => result.status === "failed")).toMatchObject({
          line: 4,
          errorCode: "exchange.card.not.accepted"
        })
        expect(output.stderr).toMatch(/summary\n {2}completed +2\n {2}exchange\.card\.not\.accepted +1\n {2}total +3/)
      }))
  })

  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("bad files", (it) => {
    it.effect("a malformed or missing batch file exits 2 naming the line, never its content", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const header = yield* gcx(["batch", file("bad.csv", `number,pin,product\n${Cards.success},${pin},1000\n`)], {
          env: envFor(server)
        })
        expect(header.code).toBe(2)
        expect(header.stderr).toContain("error: batch file: line 1: the CSV header must name cardNumber")

        // refused with --out: neither the results file nor its new key file is left behind
        const out = Path.join(directory, "refused.jsonl")
        const wide = file("wide.csv", `cardNumber,pinNumber,productLineId\n${Cards.success},${pin},1000,extra\n`)
        const refused = yield* gcx(["batch", wide, "--out", out], { env: envFor(server) })
        expect(refused.code).toBe(2)
        expect(refused.stderr).toContain("batch file: line 2: 4 fields where the header names 3")
        expect(Fs.existsSync(out)).toBe(false)
        expect(Fs.existsSync(`${out}.key`)).toBe(false)

        const missing = yield* gcx(["batch", Path.join(directory, "nowhere.csv")], { env: envFor(server) })
        expect(missing.code).toBe(2)
        expect((yield* server.journal).requests.createQuote).toBe(0)
      }))
  })

  it.live("with every card completed, the batch exits 0", () =>
    Effect.gen(function*() {
      const input = file("ok.csv", `cardNumber,pinNumber,productLineId\n${Cards.instant},${pin},1000\n`)
      const output = yield* gcx(["batch", input], { env: { GCX_SANDBOX_TIME_SCALE: "0.05" } })
      expect(output.code).toBe(0)
      expect(output.stdout).toMatch(/ {2}completed +1\n {2}total +1/)
    }))
})
