/**
 * `pnpm demo` (its entry, run as `pnpm demo` runs it) exits 0 and shows the
 * whole flow: one quote, every scenario, a batch and its resume.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { entries, expectNoSecrets, spawn } from "./helpers.js"

it.live("pnpm demo runs the whole flow against the embedded sandbox and exits 0", () =>
  Effect.gen(function*() {
    const output = yield* spawn(process.execPath, ["--import", "tsx", entries.demo], {
      env: { GCX_SANDBOX_TIME_SCALE: "0.1" },
      timeout: 90_000
    })
    expectNoSecrets(output)
    expect(output.code, output.stderr).toBe(0)
    expect(output.stderr).toMatch(
      /^gcx: pnpm demo: using the embedded sandbox at http:\/\/127\.0\.0\.1:\d+, time scale 0\.1\n$/
    )
    const { stdout } = output
    expect(stdout).toContain("1. One quote, with live progress")
    expect(stdout).toMatch(/completed +[0-9A-Z]{26} +actual 100\.00 +exchange 85\.00/)
    expect(stdout).toContain("2. One card of each scenario")
    expect(stdout).toMatch(
      /✗ \*\*\*\*0050 +merchant unavailable +MerchantUnavailable .*\(exit code 4\), tell the customer: "/
    )
    expect(stdout).toMatch(/✔ \*\*\*\*0068 +slow +completed in/)
    expect(stdout).toContain("3. A small batch")
    expect(stdout).toContain("5 finished earlier (skipped)")
    expect(stdout).toMatch(/Demo finished in \d+\.\d s\./)
  }), { timeout: 120_000 })
