/**
 * The install test's checks: each prints one line (PASS, FAIL, or NOT OK for a check that is
 * only reported) and is recorded for the summary.
 */
import type { Result } from "./Process.js"

export interface Outcome {
  readonly name: string
  readonly required: boolean
  readonly ok: boolean
  readonly detail: string
  readonly seconds: number
}

/** Every check run so far, in order. */
export const outcomes: Array<Outcome> = []

/** A check's verdict: what it found (passed), or why it failed. */
export type Verdict = string | { readonly fail: string }

/** Runs one check, prints its line and records it; a thrown error is a failure. */
export const check = async (
  name: string,
  required: boolean,
  body: () => Verdict | Promise<Verdict>
): Promise<boolean> => {
  const started = performance.now()
  let ok = false
  let detail: string
  try {
    const result = await body()
    ok = typeof result === "string"
    detail = typeof result === "string" ? result : result.fail
  } catch (error) {
    detail = error instanceof Error ? error.message : String(error)
  }
  const seconds = (performance.now() - started) / 1000
  outcomes.push({ name, required, ok, detail, seconds })
  const status = ok ? "PASS" : required ? "FAIL" : "NOT OK (reported only)"
  console.log(`${status}  ${name} (${seconds.toFixed(1)} s)${detail === "" ? "" : `: ${detail}`}`)
  return ok
}

/** The last non-empty line of an output. */
export const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? ""

/** A failure with what the process printed (its tail). */
export const failed = (result: Result) => ({
  fail: `exit ${result.code}\n${(result.stdout + result.stderr).trim().split("\n").slice(-25).join("\n")}`
})

/** Passes when the process exited 0. */
export const passedIf = (result: Result, detail = ""): Verdict => result.code === 0 ? detail : failed(result)

/** Checks that a program printed a completed quote (a JSON object, `_tag` Completed) as its last line. */
export const completedQuote = (result: Result): Verdict => {
  if (result.code !== 0) return failed(result)
  try {
    const printed = JSON.parse(lastLine(result.stdout))
    return printed._tag === "Completed" ? lastLine(result.stdout) : { fail: `last line: ${lastLine(result.stdout)}` }
  } catch {
    return failed(result)
  }
}

/** The summary line; sets the exit code when a required check failed (or none ran). */
export const summarize = (seconds: number): void => {
  const required = outcomes.filter((outcome) => outcome.required)
  const passed = required.filter((outcome) => outcome.ok).length
  const reported = outcomes.filter((outcome) => !outcome.required)
  console.log("")
  console.log(
    `install test: ${passed} passed, ${required.length - passed} failed` +
      (reported.length === 0
        ? ""
        : `; reported only: ${reported.map((o) => `${o.name} ${o.ok ? "ok" : "not ok"}`).join(", ")}`) +
      ` (${seconds.toFixed(0)} s)`
  )
  if (passed < required.length || required.length === 0) process.exitCode = 1
}
