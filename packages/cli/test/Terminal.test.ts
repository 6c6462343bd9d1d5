/**
 * `gcx` in a terminal: a session through a pseudo-terminal (`script` from
 * util-linux) shows the live progress bar, redrawn in place.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { cardArgs, entries, envFor, expectNoSecrets, pin, sandbox, spawn } from "./helpers.js"

/** Runs `gcx <args>` in a pseudo-terminal; its stdout is what the terminal received. */
const inTerminal = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  spawn("script", [
    "--quiet",
    "--flush",
    "--return",
    "--command",
    [process.execPath, "--import", "tsx", entries.bin, ...args].join(" "),
    "/dev/null"
  ], { env }).pipe(Effect.tap((output) => Effect.sync(() => expectNoSecrets(output))))

const redraw = "\r\u001b[2K"

/** The text of a frame without its colours (SGR sequences). */
const uncoloured = (text: string) =>
  text.split("\u001b[").map((part, i) => (i === 0 ? part : part.replace(/^[0-9;]*m/, ""))).join("")

describe.concurrent("gcx in a terminal", () => {
  // 0.5: the success card takes one second, so the bar is redrawn a few times
  layer(sandbox({ timeScale: 0.5 }), { excludeTestServices: true })("against a sandbox", (it) => {
    it.effect("quote shows a progress bar with the percentage and the two steps, redrawn in place", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* inTerminal(["quote", ...cardArgs(TestData.Cards.success)], envFor(server))
        expect(output.code).toBe(0)
        const screen = output.stdout
        expect(screen).toMatch(/^quote \*\*\*\*0001 on product 1000: transaction [0-9A-Z]{26}\r\n/)
        const frames = screen.split(redraw).slice(1)
        expect(frames.length).toBeGreaterThanOrEqual(3)
        const plain = frames.map(uncoloured)
        const percents = new Set(plain.map((frame) => /\] +(\d+)%/.exec(frame)?.[1]))
        expect(percents.size).toBeGreaterThanOrEqual(3)
        expect(percents).toContain("100")
        expect(plain.some((frame) => /○ exchange\.svc\.fraud\.check/.test(frame))).toBe(true)
        expect(plain.at(-1)).toMatch(
          /^\[█{20}\] 100% {2}✔ exchange\.vault\.credit\.card {2}✔ exchange\.svc\.fraud\.check/
        )
        expect(screen).toContain("\u001b[0;36m█")
        expect(screen).toMatch(/✔ completed {2}actual 100\.00 {2}exchange 85\.00\r\n$/)
      }))

    it.effect("batch shows one bar for the batch, then the summary", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-terminal-test-"))
        const file = Path.join(directory, "cards.csv")
        Fs.writeFileSync(
          file,
          [
            "cardNumber,pinNumber,productLineId",
            ...["0001", "0019", "0035", "0159"].map((end) => `600600000000${end},${pin},1000`)
          ].join("\n")
        )
        const output = yield* inTerminal(["batch", file, "--concurrency", "2"], { ...envFor(server), NO_COLOR: "1" })
        expect(output.code).toBe(3)
        const plain = output.stdout.split(redraw).slice(1)
        expect(plain[0]).toMatch(/^batch \[░{20}\] {3}0% {2}0\/4 cards {2}✔ 0 {2}✗ 0/)
        expect(plain.at(-1)).toMatch(/^batch \[█{20}\] 100% {2}4\/4 cards {2}✔ 3 {2}✗ 1\r\n/)
        // NO_COLOR: the only escape sequences are the redraws
        expect(output.stdout.split("\u001b[").length - 1).toBe(plain.length)
        expect(output.stdout).toMatch(/summary\r\n {2}completed +3\r\n {2}exchange\.invalid\.card +1\r\n {2}total +4/)
      }))
  })
})
