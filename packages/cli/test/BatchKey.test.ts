/**
 * The batch key, through the real `gcx` process: an empty, short or foreign
 * key file and a weak `GCX_BATCH_KEY` are each refused with exit 2 and one
 * line saying what to do, before any quote.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Sandbox } from "@gcx/sandbox"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { envFor, expectOneErrorLine, gcx, sandbox } from "./helpers.js"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-batch-key-test-"))
const input = Path.join(directory, "cards.csv")
Fs.writeFileSync(input, "cardNumber,pinNumber,productLineId\n6006000000000001,PinSentinel0x,1000\n")

/** A case: how its key is given (a key file written beforehand, or the variable), and what the refusal says. */
interface Refusal {
  readonly name: string
  readonly keyFile?: { readonly text: string; readonly mode?: number; readonly uid?: number }
  readonly variable?: string
  readonly says: ReadonlyArray<string>
}

const refusals: ReadonlyArray<Refusal> = [
  { name: "empty", keyFile: { text: "" }, says: ["does not hold a key (64 hex characters", "remove it"] },
  { name: "short", keyFile: { text: "0123abcd\n" }, says: ["does not hold a key (64 hex characters"] },
  {
    name: "foreign",
    keyFile: { text: `${"7f".repeat(32)}\n`, uid: 65534 },
    says: ["is owned by another user", "chown"]
  },
  {
    name: "group",
    keyFile: { text: `${"7f".repeat(32)}\n`, mode: 0o640 },
    says: ["may be read by others", "chmod 600"]
  },
  {
    name: "variable-short",
    variable: "0123456789abcdef0123",
    says: ["GCX_BATCH_KEY must have at least 32 characters"]
  },
  { name: "variable-repeated", variable: "a".repeat(40), says: ["GCX_BATCH_KEY must not be one character repeated"] }
]

const prepare = (refusal: Refusal): string => {
  const out = Path.join(directory, `${refusal.name}.jsonl`)
  if (refusal.keyFile !== undefined) {
    Fs.writeFileSync(`${out}.key`, refusal.keyFile.text, { mode: 0o600 })
    Fs.chmodSync(`${out}.key`, refusal.keyFile.mode ?? 0o600)
    if (refusal.keyFile.uid !== undefined) Fs.chownSync(`${out}.key`, refusal.keyFile.uid, refusal.keyFile.uid)
  }
  return out
}

describe("gcx batch: the batch key", () => {
  layer(sandbox(), { excludeTestServices: true })("refusals", (it) => {
    it.effect(
      "an empty, short, foreign or group-readable key file, a short or one-character GCX_BATCH_KEY: exit 2, one line, no quote",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          // a key file owned by another user can only be made by root; others check the rest
          const cases = refusals.filter((refusal) => refusal.keyFile?.uid === undefined || process.getuid?.() === 0)
          const outputs = yield* Effect.forEach(cases, (refusal) => {
            const out = prepare(refusal)
            const env = refusal.variable === undefined
              ? envFor(server)
              : { ...envFor(server), GCX_BATCH_KEY: refusal.variable }
            return gcx(["batch", input, "--out", out], { env })
          }, { concurrency: 3 })
          for (const [index, output] of outputs.entries()) {
            expect(output.code, cases[index]!.name).toBe(2)
            expectOneErrorLine(output.stderr, "batch key", ...cases[index]!.says)
          }
          expect((yield* server.journal).requests.createQuote).toBe(0)
          // no results file was started for any of them
          expect(Fs.readdirSync(directory).filter((name) => name.endsWith(".jsonl"))).toEqual([])
        }),
      120_000
    )
  })
})
