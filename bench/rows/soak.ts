/**
 * Row 10, soak: many quotes through one process each, with the sandbox's
 * faults on (503s, 500s, resets, POST answers dropped after processing,
 * stalls), and the process's memory after the run against after a warm-up:
 * in-process `getQuote` (50,000 quotes) and durable `execute` embedded on
 * SQLite (5,000), each in a child process of its own (`soak-child.ts`,
 * `--expose-gc`), warmed up with 2,000 quotes. RSS and heap used are read
 * after full collections (durable: once the cluster has reaped the finished
 * quotes' entities). A second child of each, on fewer quotes, writes a heap
 * snapshot at both points (writing one grows the RSS), diffed by constructor
 * (`internal/heapDiff.ts`): every constructor that grew is named. `--quick` runs a few hundred quotes, without the
 * goals enforced.
 */
import type { Faults } from "@gcx/sandbox"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Child from "../internal/child.js"
import * as HeapDiff from "../internal/heapDiff.js"
import { inBench } from "../internal/paths.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { round } from "../internal/stats.js"
import type { SoakChildResult } from "./soak-child.js"

/** The faults, as shares of each route's requests (lighter than the chaos suite's, and seeded). */
const faults: ReadonlyArray<Faults.FaultRule> = [
  { route: "any", kind: "status503", probability: 0.1 },
  { route: "any", kind: "status500", probability: 0.02 / 0.9 },
  { route: "any", kind: "reset", probability: 0.02 / 0.88 },
  { route: "createQuote", kind: "dropAnswer", probability: 0.02 / 0.86 },
  { route: "any", kind: "stall", probability: 0.002 }
]

/**
 * How long a durable child waits before each reading, so that the cluster has reaped the entities of
 * finished quotes (idle time 5 s, checked every 5 s). At about 180 quotes/s the reaper lags: after
 * 11 s the heap still held a fiber, 7 latches and 2 semaphores per quote of the last thousands
 * (1.45× after 5,000 quotes); after 40 s it was back to 1.01×, the snapshot diff naming only JIT code.
 */
const settleMillis = (quick: boolean) => (quick ? 11_000 : 40_000)

const runChild = (
  endpoint: Endpoint,
  mode: SoakChildResult["mode"],
  warmup: number,
  quotes: number,
  dir: string,
  snapshots: boolean,
  settle: number
): Promise<SoakChildResult> =>
  // a full run waits 40 s before each durable reading, a quick one 11 s (see `settleMillis`)
  Child.resultOf<SoakChildResult>(
    `soak (${mode})`,
    inBench("rows", "soak-child.ts"),
    [JSON.stringify(endpoint), mode, String(warmup), String(quotes), dir, snapshots ? "snapshots" : "measure"],
    { ...process.env, GCX_SOAK_SETTLE_MS: String(settle) }
  )

/** Growth from after the warm-up to after the run, as a ratio (1.05 = 5 % more). */
const growth = (result: SoakChildResult, key: "rss" | "heapUsed") => result.afterRun[key] / result.afterWarmup[key]

/** The growths of JavaScript objects and closures (JIT code, hidden classes and shapes are the engine's). */
const named = (grew: ReadonlyArray<HeapDiff.Growth>) =>
  grew.filter((growth) => growth.name.startsWith("object:") || growth.name.startsWith("closure:"))

const mib = (bytes: number) => fmt(bytes / 2 ** 20, 1)

/** Runs row 10. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    const warmup = context.quick ? 100 : 2_000
    const sizes = { "in-process": context.quick ? 600 : 50_000, durable: context.quick ? 100 : 5_000 } as const
    const snapshotSizes = { "in-process": 10_000, durable: 1_000 } as const
    // 0.01: the 2 s card completes in about 20 ms, so that it is polled without slowing the run.
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 0.01, seed: 2026, faults }])
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "gcx-bench-soak-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const measured = yield* Effect.promise(async () => {
      const out: Array<{ result: SoakChildResult; grew: Array<HeapDiff.Growth>; snapshotQuotes: number }> = []
      for (const mode of ["in-process", "durable"] as const) {
        context.log(`soak: ${mode}, ${fmt(warmup)} warm-up quotes then ${fmt(sizes[mode])}`)
        // A full run takes the snapshots in a second child, on fewer quotes (a snapshot grows the RSS for
        // good); a quick one (goals not enforced) in the same child.
        const result = await runChild(
          sandbox.endpoint,
          mode,
          warmup,
          sizes[mode],
          dir,
          context.quick,
          settleMillis(context.quick)
        )
        const snapshotQuotes = Math.min(sizes[mode], snapshotSizes[mode])
        if (!context.quick) {
          context.log(
            `soak: ${mode}, heap snapshots after ${fmt(warmup)} warm-up quotes and ${fmt(snapshotQuotes)} more`
          )
        }
        const snapshotted = context.quick
          ? result
          : await runChild(sandbox.endpoint, mode, warmup, snapshotQuotes, dir, true, settleMillis(context.quick))
        let grew: Array<HeapDiff.Growth> = []
        if (snapshotted.snapshots !== undefined) {
          // Anything that gained one live object per 100 quotes (at least 50) is named.
          const minCount = Math.max(50, Math.floor(snapshotQuotes / 100))
          grew = HeapDiff.diff(
            HeapDiff.counts(snapshotted.snapshots.afterWarmup),
            HeapDiff.counts(snapshotted.snapshots.afterRun),
            minCount
          ).slice(0, 20)
          fs.rmSync(snapshotted.snapshots.afterWarmup, { force: true })
          fs.rmSync(snapshotted.snapshots.afterRun, { force: true })
        }
        context.log(
          `soak: ${mode}: ${fmt(result.quotes / result.seconds)} quotes/s, ${result.failures} failed, RSS ` +
            `${mib(result.afterWarmup.rss)} → ${mib(result.afterRun.rss)} MiB, heap ${
              mib(result.afterWarmup.heapUsed)
            } → ` +
            `${mib(result.afterRun.heapUsed)} MiB; grew: ${
              grew.map((g) => `${g.name} +${g.after - g.before}`).join(", ") || "nothing"
            }`
        )
        out.push({ result, grew, snapshotQuotes })
      }
      // The baseline: the raw fetch client on the same cards and faults, for the memory plain Node HTTP keeps.
      context.log(`soak: raw fetch (baseline), ${fmt(warmup)} warm-up quotes then ${fmt(sizes["in-process"])}`)
      const raw = await runChild(sandbox.endpoint, "raw", warmup, sizes["in-process"], dir, false, 0)
      return { out, raw }
    })
    const [inProcess, durable] = measured.out as [typeof measured.out[0], typeof measured.out[0]]
    const raw = measured.raw
    const figures = (side: typeof inProcess) => ({
      quotes: side.result.quotes,
      warmup: side.result.warmup,
      seconds: round(side.result.seconds, 1),
      quotesPerSecond: round(side.result.quotes / side.result.seconds, 1),
      failures: side.result.failures,
      busEvents: side.result.busEvents,
      afterWarmup: side.result.afterWarmup,
      afterRun: side.result.afterRun,
      rssGrowth: round(growth(side.result, "rss"), 3),
      heapGrowth: round(growth(side.result, "heapUsed"), 3),
      grew: side.grew,
      snapshotQuotes: side.snapshotQuotes
    })
    const lines = (name: string, side: typeof inProcess, id: string) => [
      {
        measure: `${name}: RSS after ${fmt(side.result.quotes)} quotes (faults on) vs after ${
          fmt(side.result.warmup)
        } warm-up quotes, MiB`,
        gcx: mib(side.result.afterRun.rss),
        baseline: mib(side.result.afterWarmup.rss),
        ratio: fmt(growth(side.result, "rss"), 3),
        goal: `soak.${id}.rss`
      },
      {
        measure: `${name}: heap used after the run vs after the warm-up, MiB (grew: ${
          named(side.grew).length === 0
            ? "no object or closure by 1 per 100 quotes"
            : named(side.grew).slice(0, 5).map((g) => `${g.name} +${fmt(g.after - g.before)}`).join(", ")
        })`,
        gcx: mib(side.result.afterRun.heapUsed),
        baseline: mib(side.result.afterWarmup.heapUsed),
        ratio: fmt(growth(side.result, "heapUsed"), 3),
        goal: `soak.${id}.heap`
      }
    ]
    const goals = (side: typeof inProcess, id: string, name: string) => [
      goal(`soak.${id}.rss`, `${name}: RSS after the run ÷ after the warm-up`, "<=", 1.1, growth(side.result, "rss")),
      goal(
        `soak.${id}.heap`,
        `${name}: heap used after the run ÷ after the warm-up`,
        "<=",
        1.1,
        growth(side.result, "heapUsed")
      )
    ]
    return {
      number: 10,
      id: "soak",
      title: "Soak",
      baseline: "the same process after its warm-up",
      params: {
        warmup,
        quotes: sizes,
        concurrency: { "in-process": 64, durable: 32 },
        faults,
        sandboxTimeScale: 0.01,
        cards: "1 in 20 invalid, 1 in 20 merchant unavailable, 1 in 4 the 2 s card (polled), the rest instant",
        http: "UndiciClient.layer (@gcx/http)",
        memory: "process.memoryUsage() after four memory-reducing full collections " +
          "(--expose-gc; gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }))",
        heapDiff: "v8.writeHeapSnapshot after the warm-up and after the run (of a second child, on at most " +
          "10,000 in-process and 1,000 durable quotes: a snapshot grows the RSS), live nodes counted by constructor",
        settle: `durable: ${settleMillis(context.quick) / 1000} s before each measure, so that the cluster reaps the ` +
          "entities of finished quotes (idle time 5 s, checked every 5 s; at about 180 quotes/s it lags past 11 s)"
      },
      figures: {
        inProcess: figures(inProcess),
        durable: figures(durable),
        raw: {
          quotes: raw.quotes,
          failures: raw.failures,
          afterWarmup: raw.afterWarmup,
          afterRun: raw.afterRun,
          rssGrowth: round(growth(raw, "rss"), 3),
          heapGrowth: round(growth(raw, "heapUsed"), 3)
        }
      },
      lines: [
        {
          measure: `for comparison, the raw fetch loop (no retries) on the same cards and faults: RSS after ${
            fmt(raw.quotes)
          } quotes vs after ${fmt(raw.warmup)}, MiB`,
          gcx: mib(raw.afterRun.rss),
          baseline: mib(raw.afterWarmup.rss),
          ratio: fmt(growth(raw, "rss"), 3)
        },
        ...lines("in-process getQuote", inProcess, "inProcess"),
        ...lines("durable execute, embedded SQLite", durable, "durable")
      ],
      goals: [
        ...goals(inProcess, "inProcess", "in-process getQuote"),
        ...goals(durable, "durable", "durable execute embedded")
      ],
      notes: [
        "growth is measured from after the warm-up, when caches, JIT code and pools are built; " +
        "each constructor that gained at least one live object per 100 quotes is named in figures.*.grew " +
        "(the table names objects and closures; JIT code and hidden classes grow as the engine warms)",
        ...(context.quick ? ["quick: the snapshots in the measured child, so its RSS after the run includes them"] : [])
      ],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
