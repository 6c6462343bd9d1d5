import { describe, expect, layer } from "@effect/vitest"
import { QuoteEvent } from "@gcx/core"
import { Sandbox } from "@gcx/sandbox"
import { Effect, Stream } from "effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as url from "node:url"
import { QuoteJournal, QuotePoller } from "../src/index.js"
import { pollerLayer, sandbox } from "./fixtures.js"

const root = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), "../../..")
const child = path.join(root, "packages/poller/test/fixtures/crash-child.ts")
const count = 8

/** Starts the child and resolves with the transactions it submitted, once all are, after killing it with SIGKILL. */
const runAndKill = (server: Sandbox.Service, directory: string) =>
  Effect.callback<ReadonlyArray<{ transactionId: string; requestId: string }>, Error>((resume) => {
    const proc = ChildProcess.spawn(
      process.execPath,
      ["--import", "tsx", child, server.baseUrl, server.stage, directory, String(count)],
      { cwd: root, stdio: ["ignore", "pipe", "pipe"] }
    )
    const submitted: Array<{ transactionId: string; requestId: string }> = []
    let buffer = ""
    let stderr = ""
    proc.stderr.on("data", (chunk) => (stderr += chunk))
    proc.stdout.on("data", (chunk) => {
      buffer += chunk
      let newline: number
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const [tag, transactionId, requestId] = buffer.slice(0, newline).split(" ")
        buffer = buffer.slice(newline + 1)
        if (tag === "SUBMITTED") submitted.push({ transactionId: transactionId!, requestId: requestId! })
      }
      if (submitted.length === count) {
        // Let it poll for a moment (a GET every 25 ms per quote), then kill it without warning.
        setTimeout(() => proc.kill("SIGKILL"), 400)
      }
    })
    proc.on("exit", (_, signal) =>
      signal === "SIGKILL" && submitted.length === count
        ? resume(Effect.succeed(submitted))
        : resume(Effect.fail(new Error(`the child ended (${signal}) after ${submitted.length} quotes: ${stderr}`))))
    return Effect.sync(() => proc.kill("SIGKILL"))
  })

describe("crash and resume", () => {
  // The slow card takes 30 s at timeScale 1: about 4.5 s here, so the kill lands mid-poll.
  layer(sandbox({ timeScale: 0.15 }), { excludeTestServices: true })("journal", (it) => {
    it.effect(
      "a process killed mid-poll loses nothing: a fresh one resumes and completes every quote once",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const directory = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-crash-"))
          const submitted = yield* runAndKill(server, directory)
          const inFlight = yield* server.transactions
          expect(inFlight.filter((t) => t.state === "pending").length).toBe(count)
          // It was killed while polling: GETs had been made for every quote.
          expect((yield* server.journal).requests.getTransaction).toBeGreaterThan(count)

          const events = yield* Effect.flatMap(
            QuotePoller.QuotePoller,
            (poller) => Stream.runCollect(poller.resumeAll())
          ).pipe(
            Effect.provide(pollerLayer(server, { journal: QuoteJournal.layerFileSystem(directory) }))
          )
          const terminals = events.filter(QuoteEvent.isTerminal)
          expect(terminals.map((e) => e._tag)).toEqual(Array(count).fill("Completed"))
          expect(terminals.map((e) => e.transactionId).sort()).toEqual(submitted.map((s) => s.transactionId).sort())

          const journal = yield* server.journal
          for (const { requestId, transactionId } of submitted) {
            expect(journal.transactionsByRequestId[requestId]).toEqual([transactionId])
          }
          expect(Object.values(journal.transactionsByRequestId).flat().length).toBe(count)
          const remaining = yield* Effect.flatMap(QuoteJournal.QuoteJournal, (j) => j.entries).pipe(
            Effect.provide(QuoteJournal.layerFileSystem(directory))
          )
          expect(remaining).toEqual([])
          fs.rmSync(directory, { recursive: true, force: true })
        }),
      60_000
    )
  })
})
