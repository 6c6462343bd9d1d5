/**
 * A resume never POSTs twice: `gcx batch --out` of 200 cards, as a separate
 * process against a sandbox over real HTTP, interrupted by SIGINT or SIGKILL
 * at seeded random points (a random count of lines in its results file, then
 * a random delay), and run again until it finishes. The sandbox must hold
 * exactly one transaction per card (a card whose POST went out unrecorded is
 * POSTed again with the same requestId and `previousAttempts + 1`, which the
 * sandbox answers with the first transaction), and the compacted results file
 * one line per card.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox } from "@gcx/sandbox"
import { Effect } from "effect"
import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { envFor, gcx, pin, sandbox } from "./helpers.js"

const cards = 200
/** How many runs are interrupted before one is let finish (bounded, whatever happens). */
const interruptions = process.env.CI ? 4 : 6
const seed = 0x9e3779b9

/** A small seeded generator (mulberry32): the same kill points on every run of the test. */
const random = (state: number) => () => {
  state = (state + 0x6d2b79f5) | 0
  let t = Math.imul(state ^ (state >>> 15), 1 | state)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const lineCount = (path: string): number => {
  try {
    return Fs.readFileSync(path, "utf8").split("\n").length - 1
  } catch {
    return 0
  }
}

/** Interrupts a process with `signal` once the results file `out` has `lines` lines and `delay` ms more have passed. */
const interrupting = (
  out: string,
  interrupt: { readonly signal: NodeJS.Signals; readonly lines: number; readonly delay: number }
) =>
(child: ChildProcess) => {
  const watch = setInterval(() => {
    if (lineCount(out) < interrupt.lines) return
    clearInterval(watch)
    setTimeout(() => child.kill(interrupt.signal), interrupt.delay)
  }, 10)
  child.on("close", () => clearInterval(watch))
}

describe("gcx batch interrupted", () => {
  layer(sandbox({ timeScale: 0.1 }), { excludeTestServices: true })("a sandbox of its own", (it) => {
    it.effect(
      "SIGINT and SIGKILL at random points, re-run until done: one transaction per card, one line per card",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-interrupt-test-"))
          const input = Path.join(directory, "cards.csv")
          const out = Path.join(directory, "results.jsonl")
          const numbers = Array.from({ length: cards }, (_, i) => `601100000000${String(i).padStart(4, "0")}`)
          Fs.writeFileSync(
            input,
            ["cardNumber,pinNumber,productLineId", ...numbers.map((number) => `${number},${pin},1000`)].join("\n")
          )
          const args = ["batch", input, "--out", out, "--concurrency", "16"]
          const next = random(seed)
          const signals: Array<string> = []
          let finished = false
          for (let attempt = 0; attempt <= interruptions && !finished; attempt++) {
            const interrupt = attempt < interruptions
              ? {
                signal: next() < 0.5 ? "SIGINT" as const : "SIGKILL" as const,
                // a card has up to three lines (posting, submitted, result): anywhere in the batch
                lines: lineCount(out) + 1 + Math.floor(next() * 150),
                delay: Math.floor(next() * 150)
              }
              : undefined
            const output = yield* gcx(args, {
              env: envFor(server),
              ...(interrupt === undefined ? {} : { onStart: interrupting(out, interrupt) })
            })
            // never a PIN or a full card number in the file, whatever state a kill left it in
            const text = Fs.existsSync(out) ? Fs.readFileSync(out, "utf8") : ""
            expect(text).not.toContain(pin)
            expect(numbers.some((number) => text.includes(number))).toBe(false)
            if (output.code === 0) finished = true
            else {
              signals.push(`${interrupt?.signal}: ${output.code ?? output.signal}`)
              // interrupted: 130 after SIGINT, killed by SIGKILL; never a failure of its own
              expect(output.code === 130 || output.signal === "SIGKILL", output.stderr).toBe(true)
            }
          }
          expect(finished, `runs: ${signals.join(", ")}`).toBe(true)
          expect(signals.length).toBeGreaterThan(0)

          // exactly one transaction per card in the sandbox
          const transactions = yield* server.transactions
          const perCard = new Map<string, number>()
          for (const transaction of transactions) {
            perCard.set(transaction.cardNumber, (perCard.get(transaction.cardNumber) ?? 0) + 1)
          }
          expect(perCard.size).toBe(cards)
          expect([...perCard.values()].every((count) => count === 1)).toBe(true)
          expect(transactions).toHaveLength(cards)
          const journal = yield* server.journal
          expect(Object.values(journal.transactionsByRequestId).every((ids) => ids.length === 1)).toBe(true)

          // the compacted results file: the header and one completed line per card
          const [header, ...lines] = Fs.readFileSync(out, "utf8").split("\n").filter((line) => line !== "")
          expect(JSON.parse(header!)).toMatchObject({ format: "gcx-batch-results", version: 3 })
          const results = lines.map((line) => JSON.parse(line) as { key: string; status: string })
          expect(results).toHaveLength(cards)
          expect(new Set(results.map((result) => result.key)).size).toBe(cards)
          expect(results.every((result) => result.status === "completed")).toBe(true)
        }),
      120_000
    )
  })
})
