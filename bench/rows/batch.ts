/**
 * Row 8, batch bookkeeping: `gcx batch --out` of the installed bin (built, packed and installed
 * with npm, as row 7 gets it), as a process of its own against a sandbox process.
 * - Refused rows: a CSV of cards with empty PINs, each refused before any I/O, so that what is
 *   measured is gcx's own bookkeeping (reading the file, fingerprints, the results file's group
 *   commits and its compaction), beside the baseline `baseline/csv-lines.mjs`, which reads the
 *   same CSV and writes one JSON line per row with nothing else. Wall-clock seconds and peak RSS
 *   (GNU time's maximum resident set size, else `/proc/<pid>/status` VmHWM polled) of both; and, for
 *   information, gcx again with V8's young generation capped (`NODE_OPTIONS=--max-semi-space-size=8`):
 *   V8 sizes it to the allocation rate, and it is most of the RSS of a long batch.
 * - Instant cards at concurrency 32: cards whose POST answers completed (the instant card, each row
 *   with its own PIN, so that no row is a duplicate), against the sandbox's own ceiling for the same
 *   requests: a token, then the same number of POSTs with plain `fetch` at the same concurrency
 *   (`baseline/RawClient.ts`), from the bench process. The gcx side includes its process start.
 */
import { Sandbox, TestData } from "@gcx/sandbox"
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as App from "../../scripts/install/App.js"
import * as Process from "../../scripts/install/Process.js"
import { RawClient } from "../baseline/RawClient.js"
import * as Admin from "../internal/Admin.js"
import { rawOptions } from "../internal/gcx.js"
import { inBench } from "../internal/paths.js"
import { pool } from "../internal/pool.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { round } from "../internal/stats.js"

/** The goals of the refused rows: at most this many seconds and this much peak RSS. */
const goalSeconds = 10
const goalRssMb = 250

/** The V8 option that caps the young generation, for the line "for information". */
const semiSpaceOption = "--max-semi-space-size=8"

const gnuTime = "/usr/bin/time"
const hasGnuTime = Fs.existsSync(gnuTime)

/** A process run to its end: exit code, wall-clock ms, peak RSS in MB and its stderr. */
interface Measured {
  readonly code: number | null
  readonly millis: number
  readonly rssMb: number
  /** User + system CPU seconds (GNU time), when measurable: what a busy machine inflates less than the wall clock. */
  readonly cpuSeconds: number | undefined
  readonly stderr: string
}

const peakFromProc = (pid: number): number => {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? 0 : Number(match[1])
  } catch {
    return 0
  }
}

/** Runs `command args` to its end (stdout discarded), measuring its wall-clock time and peak RSS. */
const measure = (command: string, args: ReadonlyArray<string>, env: Record<string, string>): Promise<Measured> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = hasGnuTime
      ? ChildProcess.spawn(gnuTime, ["-f", "gcx-bench-rss-kb %M %U %S", command, ...args], {
        env,
        stdio: ["ignore", "ignore", "pipe"]
      })
      : ChildProcess.spawn(command, args, { env, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    let peakKb = 0
    const poll = hasGnuTime ? undefined : setInterval(() => (peakKb = Math.max(peakKb, peakFromProc(child.pid!))), 20)
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8_000)))
    child.on("error", reject)
    child.on("close", (code) => {
      clearInterval(poll)
      const millis = performance.now() - started
      const reported = /gcx-bench-rss-kb (\d+) ([\d.]+) ([\d.]+)/.exec(stderr)
      if (reported !== null) peakKb = Number(reported[1])
      resolve({
        code,
        millis,
        rssMb: peakKb / 1024,
        cpuSeconds: reported === null ? undefined : Number(reported[2]) + Number(reported[3]),
        stderr: stderr.replace(/gcx-bench-rss-kb .*\n?/, "")
      })
    })
  })

const csv = (path: string, rows: ReadonlyArray<readonly [card: string, pin: string]>) =>
  Fs.writeFileSync(
    path,
    ["cardNumber,pinNumber,productLineId", ...rows.map(([card, pin]) => `${card},${pin},1000`)].join("\n") + "\n"
  )

const lineCount = (path: string) => Fs.readFileSync(path, "utf8").split("\n").filter((line) => line !== "").length

/** Runs row 8. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    const refusedRows = context.quick ? 5_000 : 100_000
    const instantCards = context.quick ? 500 : 10_000
    const concurrency = 32
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 1, logLevel: "None" }])
    return yield* Effect.tryPromise({
      try: async () => {
        context.log("batch: build, pack and npm install of gcx (reused while the tarballs are unchanged)")
        const { app, bin } = await App.installedGcx()
        const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-bench-batch-"))
        const env = Process.userEnvironment(Sandbox.environment(sandbox.endpoint))
        try {
          // (a) refused rows, beside the baseline
          const refusedCsv = Path.join(directory, "refused.csv")
          csv(refusedCsv, Array.from({ length: refusedRows }, (_, i) => [`6011${String(i).padStart(12, "0")}`, ""]))
          context.log(`batch: ${fmt(refusedRows)} refused rows, the baseline`)
          const baseline = await measure(
            process.execPath,
            [inBench("baseline", "csv-lines.mjs"), refusedCsv, Path.join(directory, "baseline.jsonl")],
            env
          )
          if (baseline.code !== 0) throw new Error(`the baseline exited ${baseline.code}: ${baseline.stderr}`)
          context.log(`batch: ${fmt(refusedRows)} refused rows, gcx batch --out`)
          const refusedOut = Path.join(directory, "refused.jsonl")
          const refused = await measure(bin, ["batch", refusedCsv, "--out", refusedOut], env)
          // exit 2: every card was refused as invalid input, the expected outcome
          const expectRefused = (measured: Measured) => {
            if (measured.code !== 2 || lineCount(refusedOut) !== refusedRows + 1) {
              throw new Error(`gcx batch (refused rows) exited ${measured.code}: ${measured.stderr.slice(-2_000)}`)
            }
          }
          expectRefused(refused)
          // for information: the same with V8's young generation capped (docs/cli.md, large batches)
          Fs.rmSync(refusedOut)
          const capped = await measure(bin, ["batch", refusedCsv, "--out", refusedOut], {
            ...env,
            NODE_OPTIONS: semiSpaceOption
          })
          expectRefused(capped)

          // (b) instant cards at concurrency 32, beside the sandbox's ceiling for the same POSTs
          const instantCsv = Path.join(directory, "instant.csv")
          csv(instantCsv, Array.from({ length: instantCards }, (_, i) => [TestData.Cards.instant, `pin${i}`]))
          await Admin.reset(sandbox.endpoint)
          context.log(`batch: ${fmt(instantCards)} instant cards at concurrency ${concurrency}, raw fetch`)
          const raw = new RawClient(rawOptions(sandbox.endpoint, 0))
          await raw.fetchToken()
          const rawStarted = performance.now()
          await pool(instantCards, concurrency, (i) =>
            raw.createQuote({ cardNumber: TestData.Cards.instant, pinNumber: `pin${i}`, productLineId: "1000" }))
          const rawMillis = performance.now() - rawStarted
          await Admin.reset(sandbox.endpoint)
          context.log(`batch: ${fmt(instantCards)} instant cards at concurrency ${concurrency}, gcx batch --out`)
          const instantOut = Path.join(directory, "instant.jsonl")
          const instant = await measure(
            bin,
            ["batch", instantCsv, "--out", instantOut, "--concurrency", String(concurrency)],
            env
          )
          const posts = (await Admin.journal(sandbox.endpoint)).requests.createQuote
          if (instant.code !== 0 || lineCount(instantOut) !== instantCards + 1) {
            throw new Error(`gcx batch (instant cards) exited ${instant.code}: ${instant.stderr.slice(-2_000)}`)
          }

          const seconds = round(refused.millis / 1000, 2)
          const baselineSeconds = round(baseline.millis / 1000, 2)
          const gcxRate = round((instantCards * 1000) / instant.millis, 1)
          const rawRate = round((instantCards * 1000) / rawMillis, 1)
          context.log(
            `batch: refused ${seconds} s, ${round(refused.rssMb, 1)} MB (baseline ${baselineSeconds} s, ${
              round(baseline.rssMb, 1)
            } MB); instant ${gcxRate} cards/s (ceiling ${rawRate})`
          )
          return {
            number: 8,
            id: "batch",
            title: "Batch bookkeeping",
            baseline: "CSV read, one JSON line per row (refused rows); raw fetch POSTs at the same concurrency (cards)",
            params: {
              refusedRows,
              instantCards,
              concurrency,
              bin: "node_modules/.bin/gcx of an npm-installed app",
              app,
              rss: hasGnuTime ? "GNU time %M" : "/proc VmHWM polled every 20 ms"
            },
            figures: {
              refusedSeconds: seconds,
              refusedRssMb: round(refused.rssMb, 1),
              refusedRowsPerSecond: round(refusedRows / (refused.millis / 1000), 0),
              refusedCpuSeconds: refused.cpuSeconds ?? null,
              baselineCpuSeconds: baseline.cpuSeconds ?? null,
              cappedSeconds: round(capped.millis / 1000, 2),
              cappedRssMb: round(capped.rssMb, 1),
              baselineSeconds,
              baselineRssMb: round(baseline.rssMb, 1),
              instantSeconds: round(instant.millis / 1000, 2),
              instantCardsPerSecond: gcxRate,
              instantRssMb: round(instant.rssMb, 1),
              rawSeconds: round(rawMillis / 1000, 2),
              rawCardsPerSecond: rawRate,
              createQuoteRequests: posts
            },
            lines: [
              {
                measure: `s for ${fmt(refusedRows)} refused rows with --out (whole process)`,
                gcx: fmt(seconds, 2),
                baseline: fmt(baselineSeconds, 2),
                ratio: fmt(seconds / baselineSeconds, 1),
                goal: "batch.refusedSeconds"
              },
              ...(refused.cpuSeconds === undefined || baseline.cpuSeconds === undefined ? [] : [{
                measure: `CPU s (user + system) for the same`,
                gcx: fmt(refused.cpuSeconds, 2),
                baseline: fmt(baseline.cpuSeconds, 2),
                ratio: fmt(refused.cpuSeconds / baseline.cpuSeconds, 1)
              }]),
              {
                measure: `peak RSS MB, ${fmt(refusedRows)} refused rows`,
                gcx: fmt(refused.rssMb, 0),
                baseline: fmt(baseline.rssMb, 0),
                ratio: fmt(refused.rssMb / baseline.rssMb, 1),
                goal: "batch.refusedRssMb"
              },
              {
                measure: `peak RSS MB, the same with NODE_OPTIONS=${semiSpaceOption} (for information)`,
                gcx: fmt(capped.rssMb, 0),
                baseline: fmt(baseline.rssMb, 0),
                ratio: fmt(capped.rssMb / baseline.rssMb, 1)
              },
              {
                measure: `cards/s, ${
                  fmt(instantCards)
                } instant cards at concurrency ${concurrency} (gcx: whole process)`,
                gcx: fmt(gcxRate, 0),
                baseline: fmt(rawRate, 0),
                ratio: fmt(gcxRate / rawRate, 2)
              }
            ],
            goals: [
              goal(
                "batch.refusedSeconds",
                `${fmt(refusedRows)} refused rows with --out in at most ${goalSeconds} s`,
                "<=",
                goalSeconds,
                seconds
              ),
              goal(
                "batch.refusedRssMb",
                `peak RSS of that batch at most ${goalRssMb} MB`,
                "<=",
                goalRssMb,
                round(refused.rssMb, 1)
              )
            ],
            notes: [
              `with NODE_OPTIONS=${semiSpaceOption}: ${round(capped.millis / 1000, 2)} s`,
              `the gcx sides include the process start; the instant cards made ${fmt(posts)} POSTs for ${
                fmt(instantCards)
              } cards`
            ],
            seconds: round((performance.now() - started) / 1000, 1)
          } satisfies RowResult
        } finally {
          Fs.rmSync(directory, { recursive: true, force: true })
        }
      },
      catch: (error) => error instanceof Error ? error : new Error(String(error))
    })
  }).pipe(Effect.scoped)
