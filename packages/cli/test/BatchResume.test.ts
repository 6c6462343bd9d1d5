/**
 * `gcx batch --out`, in process (`Cli.main`) against a sandbox: the results
 * file never replaces the batch file or a file that is not a results file;
 * a re-run finds cards by their keyed fingerprint, wherever their rows moved;
 * a duplicate row is quoted once; nothing in the results file gives back a
 * card number or a PIN; the key is checked.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox } from "@gcx/sandbox"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as BatchResults from "../src/BatchResults.js"
import { envFor, expectOneErrorLine, gcxInProcess, lines, sandbox } from "./helpers.js"

const decodeHeader = Schema.decodeUnknownSync(Schema.fromJsonString(BatchResults.Header))
const decodeResult = Schema.decodeUnknownSync(Schema.fromJsonString(BatchResults.Result))

/** Seven cards that complete, each with its own PIN sentinel. */
const seven = ["0001", "0019", "0142", "0159", "0167", "0175", "0183"].map((end, i) => ({
  card: `600600000000${end}`,
  pin: `PinSentinel${i}x`
}))

const csv = (rows: ReadonlyArray<{ readonly card: string; readonly pin: string }>) =>
  ["cardNumber,pinNumber,productLineId", ...rows.map(({ card, pin }) => `${card},${pin},1000`)].join("\n") + "\n"

const workspace = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-resume-test-"))

const readResults = (path: string) => {
  const [header, ...results] = lines(Fs.readFileSync(path, "utf8"))
  return { header: decodeHeader(header), results: results.map((line) => decodeResult(line)) }
}

/** The one `error:` line of a usage error, with its hint. */
const expectUsageError = (output: { code: number; stderr: string }, ...fragments: ReadonlyArray<string>) => {
  expect(output.code).toBe(2)
  expect(expectOneErrorLine(output.stderr, ...fragments)).toMatch(/\(see gcx batch --help\)$/)
}

describe.concurrent("gcx batch --out", () => {
  layer(sandbox({ timeScale: 0.02 }), { excludeTestServices: true })("resume", (it) => {
    it.effect("a row inserted at the top: the re-run quotes only the new card; a duplicate row is quoted once", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const directory = workspace()
        const input = Path.join(directory, "cards.csv")
        const out = Path.join(directory, "results.jsonl")
        Fs.writeFileSync(input, csv(seven))
        const posts = () => Effect.map(server.journal, (journal) => journal.requests.createQuote)

        const first = yield* gcxInProcess(["batch", input, "--out", out], envFor(server))
        expect(first.code).toBe(0)
        expect(yield* posts()).toBe(7)
        expect(readResults(out).results).toHaveLength(7)
        expect(Fs.statSync(`${out}.key`).mode & 0o777).toBe(0o600)

        // a new card on top, the others moved down one row and reordered, one row repeated
        const rows = [{ card: "6006000000000118", pin: "PinSentinel7x" }, ...seven.slice().reverse(), seven[2]!]
        Fs.writeFileSync(input, csv(rows))
        const second = yield* gcxInProcess(["batch", input, "--out", out], envFor(server))
        expect(second.code).toBe(0)
        expect(yield* posts()).toBe(8)
        expect(second.stdout).toContain("7 finished earlier (skipped)")
        expect(second.stdout).toContain("1 duplicate row(s) (quoted once)")
        expect(second.stdout).toMatch(/line 10: the same card as line 7, quoted once/)
        expect(second.stdout).toMatch(/ {2}duplicate rows \(quoted once\) +1\n/)
        const { header, results } = readResults(out)
        expect(results).toHaveLength(8)
        expect(new Set(results.map((result) => result.key)).size).toBe(8)

        // nothing gives a card number or a PIN back: no sentinel, and the key is not in the file
        const text = Fs.readFileSync(out, "utf8")
        const key = Fs.readFileSync(`${out}.key`, "utf8").trim()
        for (const secret of [...rows.map((row) => row.card), ...rows.map((row) => row.pin), key]) {
          expect(text).not.toContain(secret)
        }
        expect(header.keyId).not.toBe(key.slice(0, 16))

        // a third run: everything finished, nothing quoted
        const third = yield* gcxInProcess(["batch", input, "--out", out], envFor(server))
        expect(third.code).toBe(0)
        expect(yield* posts()).toBe(8)
      }))
  })

  layer(sandbox({ timeScale: 0.02 }), { excludeTestServices: true })("duplicates", (it) => {
    it.effect("a duplicate row without --out is quoted once", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = Path.join(workspace(), "cards.csv")
        Fs.writeFileSync(input, csv([seven[0]!, seven[0]!]))
        const output = yield* gcxInProcess(["batch", input, "--json"], envFor(server))
        expect(output.code).toBe(0)
        expect(lines(output.stdout)).toHaveLength(1)
        expect(output.stderr).toContain("line 3: the same card as line 2, quoted once")
        expect((yield* server.journal).requests.createQuote).toBe(1)
      }))
  })

  layer(sandbox({ timeScale: 0.02 }), { excludeTestServices: true })("posts", (it) => {
    it.effect("each POST's requestId and previousAttempts are in the file before it goes out; retries too", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const directory = workspace()
        const input = Path.join(directory, "cards.csv")
        const out = Path.join(directory, "results.jsonl")
        Fs.writeFileSync(input, csv(seven.slice(0, 1)))
        // the first two POSTs fail: the client retries with the same requestId and previousAttempts 1, then 2
        yield* server.setFaults([{ route: "createQuote", kind: "status503", times: 2 }])
        const log: Array<{ readonly status: string; readonly previousAttempts?: number; readonly requestId?: string }> =
          []
        const watcher = setInterval(() => {
          const lines = Fs.existsSync(out) ? Fs.readFileSync(out, "utf8").split("\n").filter((l) => l !== "") : []
          for (const line of lines.slice(1 + log.length)) log.push(JSON.parse(line))
        }, 1)
        const output = yield* gcxInProcess(["batch", input, "--out", out], envFor(server)).pipe(
          Effect.ensuring(Effect.sync(() => clearInterval(watcher)))
        )
        yield* server.setFaults([])
        expect(output.code).toBe(0)
        const posts = (yield* server.journal).entries.filter((entry) => entry.route === "createQuote")
        expect(posts.map((entry) => entry.previousAttempts ?? 0)).toEqual([0, 1, 2])
        const requestId = posts[0]!.requestId
        expect(posts.every((entry) => entry.requestId === requestId)).toBe(true)
        // the file, appended as the batch went (read before its compaction): each attempt recorded before it
        const postings = log.filter((line) => line.status === "posting")
        expect(postings.map((line) => [line.requestId, line.previousAttempts])).toEqual([
          [requestId, 0],
          [requestId, 1],
          [requestId, 2]
        ])
        expect(readResults(out).results).toEqual([
          expect.objectContaining({ status: "completed", requestId })
        ])
      }))

    it.effect("a line over 64 KiB is a usage error naming its line, before any POST", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = Path.join(workspace(), "cards.csv")
        Fs.writeFileSync(input, `${csv(seven.slice(0, 1))}6006000000000001,${"x".repeat(70_000)},1000\n`)
        expectUsageError(
          yield* gcxInProcess(["batch", input], envFor(server)),
          "batch file: line 3 is longer than 64 KiB"
        )
        expect((yield* server.journal).requests.createQuote).toBe(0)
      }))
  })

  layer(sandbox({ timeScale: 0.02 }), { excludeTestServices: true })("refusals", (it) => {
    it.effect("--out naming the batch file, however spelled or linked, or a file that is not results: exit 2, untouched", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const directory = workspace()
        const input = Path.join(directory, "cards.csv")
        Fs.writeFileSync(input, csv(seven.slice(0, 2)))
        const original = Fs.readFileSync(input, "utf8")
        Fs.symlinkSync(input, Path.join(directory, "link.jsonl"))
        Fs.linkSync(input, Path.join(directory, "hard.jsonl"))
        const other = Path.join(directory, "notes.txt")
        Fs.writeFileSync(other, "my notes\n")
        const cwd = process.cwd()
        const relative = Path.relative(cwd, input)
        for (
          const out of [
            input,
            `./${relative}`,
            Path.join(directory, ".", "cards.csv"),
            Path.join(directory, "link.jsonl")
          ]
        ) {
          expectUsageError(
            yield* gcxInProcess(["batch", input, "--out", out], envFor(server)),
            "is the batch file itself"
          )
        }
        expectUsageError(
          yield* gcxInProcess(["batch", input, "--out", Path.join(directory, "hard.jsonl")], envFor(server)),
          "is the batch file itself"
        )
        expectUsageError(
          yield* gcxInProcess(["batch", input, "--out", other], envFor(server)),
          "is not a gcx results file"
        )
        expect(Fs.readFileSync(input, "utf8")).toBe(original)
        expect(Fs.readFileSync(other, "utf8")).toBe("my notes\n")
        expect((yield* server.journal).requests.createQuote).toBe(0)
        // no temporary file is left behind
        expect(Fs.readdirSync(directory).filter((name) => name.endsWith(".tmp"))).toEqual([])
      }))

    it.effect("a missing or different key is a clear error before any quote", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const directory = workspace()
        const input = Path.join(directory, "cards.csv")
        const out = Path.join(directory, "results.jsonl")
        Fs.writeFileSync(input, "cardNumber,pinNumber,productLineId\n")
        const first = yield* gcxInProcess(["batch", input, "--out", out], envFor(server))
        expect(first.code).toBe(0)
        Fs.writeFileSync(input, csv(seven.slice(0, 1)))

        const wrong = yield* gcxInProcess(["batch", input, "--out", out], {
          ...envFor(server),
          GCX_BATCH_KEY: "another-key-of-some-length-32-chars-or-more"
        })
        expectUsageError(wrong, "batch key", "GCX_BATCH_KEY is not the one")

        Fs.renameSync(`${out}.key`, Path.join(directory, "moved.key"))
        expectUsageError(yield* gcxInProcess(["batch", input, "--out", out], envFor(server)), "batch key", "is missing")

        Fs.renameSync(Path.join(directory, "moved.key"), `${out}.key`)
        Fs.chmodSync(`${out}.key`, 0o644)
        expectUsageError(yield* gcxInProcess(["batch", input, "--out", out], envFor(server)), "chmod 600")
        expect((yield* server.journal).requests.createQuote).toBe(0)
      }))
  })
})
