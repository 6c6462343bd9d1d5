/**
 * `gcx quote --durable` interrupted (SIGINT, SIGKILL) while its quote is in
 * flight, then run again with the same card: the run resumes the same quote
 * (the requestId recorded against the card's keyed fingerprint), and the
 * sandbox's journal holds exactly one transaction. Real `gcx` processes,
 * embedded on SQLite in a temporary file, against a sandbox in this process.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { cardArgs, envFor, expectNoSecrets, expectOneErrorLine, gcx, interruptedGcx, sandbox } from "./helpers.js"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-durable-resume-"))
const { Cards } = TestData

/** The variables of a durable run: the sandbox, a database file, a data key. */
const durableEnv = (server: Sandbox.Service, name: string) => ({
  ...envFor(server),
  GCX_DATABASE_FILE: Path.join(directory, `${name}.db`),
  GCX_DATA_KEY: randomBytes(32).toString("base64")
})

/** Runs `gcx <args>` until its stdout shows `submitted`, then sends it `signal`; returns once it has ended. */
const interruptAfterSubmit = (args: ReadonlyArray<string>, env: Record<string, string>, signal: NodeJS.Signals) =>
  interruptedGcx(args, env, /^submitted /m, signal)

/** Every transaction the sandbox created, over every requestId. */
const transactions = Effect.flatMap(Sandbox.SandboxServer, (server) => server.journal).pipe(
  Effect.map((journal) => Object.values(journal.transactionsByRequestId).flat())
)

const resumes = (signal: NodeJS.Signals) =>
  Effect.gen(function*() {
    const server = yield* Sandbox.SandboxServer
    const env = durableEnv(server, `resume-${signal}`)
    const args = ["quote", "--durable", ...cardArgs(Cards.slow)]
    const interrupted = yield* interruptAfterSubmit(args, env, signal)
    expectNoSecrets(interrupted)
    expect(signal === "SIGKILL" ? interrupted.signal : interrupted.code).toBe(signal === "SIGKILL" ? "SIGKILL" : 130)
    expect((yield* transactions).length).toBe(1)
    // Run again with the same card: the same quote, resumed; no second POST.
    const again = yield* gcx(args, { env })
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(/^completed /m)
    expect((yield* transactions).length).toBe(1)
    const posts = (yield* server.journal).entries.filter((entry) => entry.route === "createQuote")
    expect(posts.filter((entry) => entry.status === 201 && entry.previousAttempts === 0).length).toBe(1)
    // Its outcome was shown: the same card quoted later is a new quote.
    const later = yield* gcx(args, { env })
    expect(later.code).toBe(0)
    expect((yield* transactions).length).toBe(2)
  })

describe.concurrent("gcx quote --durable, interrupted and run again with the same card", () => {
  layer(sandbox({ timeScale: 0.1 }), { excludeTestServices: true })("SIGKILL", (it) => {
    it.effect("no second POST: exactly one transaction in the sandbox's journal", () => resumes("SIGKILL"), 150_000)
  })

  layer(sandbox({ timeScale: 0.1 }), { excludeTestServices: true })("SIGINT", (it) => {
    it.effect("no second POST: exactly one transaction in the sandbox's journal", () => resumes("SIGINT"), 150_000)
  })

  layer(sandbox({ timeScale: 0.01 }), { excludeTestServices: true })("--request-id", (it) => {
    it.effect(
      "a requestId reused with another card: RequestIdConflict, exit 2, one line naming no card",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const env = durableEnv(server, "conflict")
          const requestId = `cli-conflict-${randomBytes(4).toString("hex")}`
          const first = yield* gcx(["quote", "--durable", "--request-id", requestId, ...cardArgs(Cards.instant)], {
            env
          })
          expect(first.code).toBe(0)
          const other = yield* gcx(["quote", "--durable", "--request-id", requestId, ...cardArgs(Cards.success)], {
            env
          })
          expect(other.code).toBe(2)
          const line = expectOneErrorLine(other.stderr, "RequestIdConflict", requestId, "(see gcx quote --help)")
          expect(line).not.toContain(Cards.success)
          const bad = yield* gcx(["quote", "--request-id", "has space", ...cardArgs(Cards.instant)], { env })
          expect(bad.code).toBe(2)
          expectOneErrorLine(bad.stderr, "--request-id must be 1 to 64 letters, digits, '-' or '_'")
        }),
      120_000
    )
  })
})
