/**
 * A hostile service cannot write to the terminal: every text of its answers
 * (user messages, messages, step tags, transaction ids) carries `ESC]0;…BEL` (set the window
 * title), `ESC[2J` (clear the screen) and a C1 CSI, and nothing gcx prints,
 * on stdout or stderr, in any mode, holds a raw control character; the
 * planted texts are shown escaped (`\x1b]0;`).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { cardArgs, envFor, gcx, hostileProxy, pin, rawControl, sandbox } from "./helpers.js"

const payload = "\u001b]0;pwned\u0007\u001b[2J\u009b31m"

/** The texts of the service's answers that gcx shows. */
const keys = ["UserMessage", "Message", "descriptionTag", "userMessage", "message"]

describe.concurrent("a hostile service", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("behind a rewriting proxy", (it) => {
    it.effect("cannot put a control character on stdout or stderr: lines, --json and batch", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const proxy = yield* hostileProxy(new URL(server.baseUrl).origin, keys, (value) => `${value}${payload}`)
        const env = {
          ...envFor(server),
          GCX_BASE_URL: server.baseUrl.replace(new URL(server.baseUrl).origin, proxy),
          GCX_AUTH_URL: proxy
        }
        const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-hostile-test-"))
        const file = Path.join(directory, "cards.csv")
        Fs.writeFileSync(
          file,
          `cardNumber,pinNumber,productLineId\n${TestData.Cards.invalid},${pin},1000\n${TestData.Cards.success},${pin},1000\n`
        )
        // a second proxy plants the sequences in the transaction ids
        const idProxy = yield* hostileProxy(
          new URL(server.baseUrl).origin,
          ["transactionId"],
          (value) => `${value}${payload}`
        )
        const idEnv = { ...env, GCX_BASE_URL: server.baseUrl.replace(new URL(server.baseUrl).origin, idProxy) }
        const [lines, steps, json, batch, ids] = yield* Effect.all([
          gcx(["quote", ...cardArgs(TestData.Cards.invalid), "--poll-interval", "20"], { env }),
          gcx(["quote", ...cardArgs(TestData.Cards.success), "--poll-interval", "20"], { env }),
          gcx(["quote", ...cardArgs(TestData.Cards.invalid), "--json", "--poll-interval", "20"], { env }),
          gcx(["batch", file, "--out", Path.join(directory, "results.jsonl")], { env }),
          gcx(["quote", ...cardArgs(TestData.Cards.success), "--poll-interval", "20"], { env: idEnv })
        ], { concurrency: "unbounded" })
        for (const output of [lines, steps, json, batch, ids]) {
          expect(output.stdout).not.toMatch(rawControl)
          expect(output.stderr).not.toMatch(rawControl)
        }
        expect(lines.code).toBe(3)
        // the planted texts reach the user, escaped
        expect(steps.code).toBe(0)
        expect(steps.stdout).toContain("exchange.vault.credit.card\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m")
        expect(lines.stderr).toMatch(/^error: .*\\x1b\]0;pwned\\x07\\x1b\[2J/m)
        expect(json.code).toBe(3)
        expect(json.stdout).toContain("\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m")
        expect(batch.code).toBe(3)
        expect(batch.stdout).toContain("\\x1b]0;pwned")
        // a transaction id the client cannot use fails the quote; what is said of it is escaped
        expect(ids.code).not.toBe(0)
        expect(ids.stderr).toMatch(/^error: /m)
        const results = Fs.readFileSync(Path.join(directory, "results.jsonl"), "utf8")
        expect(results).not.toMatch(rawControl)
      }).pipe(Effect.scoped))
  })
})
