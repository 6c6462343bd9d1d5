/**
 * How `gcx serve` ends when it is stopped, as a real process: SIGTERM (a
 * process manager's stop) is its normal end, exit 0 once it has shut down;
 * Ctrl+C (SIGINT) is an interruption, exit 130, as for every command.
 */
import { describe, expect, it } from "@effect/vitest"
import { CardCipher } from "@gcx/workflow"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { interruptedGcx } from "./helpers.js"

/** `gcx serve --embedded` on a database of its own, sent `signal` once it prints its address. */
const servedUntil = (signal: NodeJS.Signals) =>
  Effect.acquireUseRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-serve-stop-"))),
    (directory) =>
      interruptedGcx(
        ["serve", "--embedded", "--port", "0"],
        {
          GCX_DATA_KEY: CardCipher.generateKey(),
          GCX_DATABASE_FILE: Path.join(directory, "gcx.db"),
          GCX_SANDBOX_TIME_SCALE: "0.01"
        },
        /^gcx serve http:\/\/127\.0\.0\.1:\d+ /m,
        signal
      ),
    (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
  )

describe("gcx serve, stopped", () => {
  it.live("by SIGTERM: a clean stop, exit 0, no error or warning on stderr", () =>
    Effect.gen(function*() {
      const output = yield* servedUntil("SIGTERM")
      expect(output.stdout).toMatch(/^gcx serve http:\/\/127\.0\.0\.1:\d+ /m)
      expect(output.code, output.stderr).toBe(0)
      // the one line on stderr is --embedded's notice of the sandbox it uses
      expect(output.stderr).toMatch(/^gcx: --embedded: using the embedded sandbox at \S+, time scale 0\.01\n$/)
      // the operator is told it stops, and when it has stopped
      expect(output.stdout).toMatch(
        /^gcx serve: stopping \(SIGTERM\): new connections refused, .*\ngcx serve: stopped\n$/m
      )
    }), { timeout: 60_000 })

  it.live("by Ctrl+C (SIGINT): interrupted, exit 130", () =>
    Effect.gen(function*() {
      const output = yield* servedUntil("SIGINT")
      expect(output.stdout).toMatch(/^gcx serve http:\/\/127\.0\.0\.1:\d+ /m)
      expect(output.code, output.stderr).toBe(130)
      expect(output.stdout).toMatch(/^gcx serve: stopping \(SIGINT\): .*\ngcx serve: stopped\n$/m)
    }), { timeout: 60_000 })
})
