/**
 * What one quote costs, per side, in processes of their own beside one
 * sandbox process: client CPU µs, heap bytes allocated, and (gcx sides) Effect
 * operations and fibers, per quote. Row 1's method (instant card, concurrency
 * 64, sides alternating round by round) with more precise counters; the lab
 * tool behind the figures of row 1 in bench/NOTES.md.
 *
 * ```sh
 * pnpm build   # the sides run the built packages (dist), as the bench does
 * node --import tsx bench/profile/quote-cost.ts [--quotes 5000] [--rounds 4] [--sides raw,undici,platform] [--cpu-prof undici]
 * ```
 *
 * Sides: `raw` (the raw `fetch` client), `undici` (`getQuote` over gcx's `UndiciClient`), `platform`
 * (`getQuote` over Effect's `NodeHttpClient.layerUndici`).
 *
 * - CPU: `process.cpuUsage()` of the side's process over the round.
 * - Allocations: `v8.GCProfiler` over the round: the heap used at its end
 *   minus at its start, plus what every collection in between freed.
 * - Operations: a separate counting round (not timed) in which each fiber's
 *   run loop adds its `currentOpCount` (the operations it evaluated) to a total.
 * - `--cpu-prof <side>` writes a V8 CPU profile of that side's measured rounds
 *   under bench/tmp/ (open in Chrome DevTools, or summarise with
 *   `bench/profile/summary.ts`).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuotePoller } from "@gcx/poller"
import { TestData } from "@gcx/sandbox"
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as Readline from "node:readline"
import * as v8 from "node:v8"
import { RawClient } from "../baseline/RawClient.js"
import * as Admin from "../internal/Admin.js"
import { countOperations } from "../internal/effectCounts.js"
import { pollerLayer, rawOptions } from "../internal/gcx.js"
import { inBench, rootDir } from "../internal/paths.js"
import { pool } from "../internal/pool.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { median, round } from "../internal/stats.js"

const card = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}

/** What a side reports of one round. */
interface Figures {
  readonly cpuMicros: number
  readonly allocatedBytes: number
  readonly operations: number | undefined
  readonly fibers: number | undefined
  readonly failures: number
}

const allocatedDuring = async <A>(task: () => Promise<A>): Promise<{ readonly value: A; readonly bytes: number }> => {
  const profiler = new v8.GCProfiler()
  const before = v8.getHeapStatistics().used_heap_size
  profiler.start()
  const value = await task()
  const after = v8.getHeapStatistics().used_heap_size
  const gcs = profiler.stop()?.statistics ?? []
  const freed = gcs.reduce(
    (sum, gc) => sum + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize,
    0
  )
  return { value, bytes: after - before + freed }
}

const child = (endpoint: Endpoint, side: string, quotes: number) => {
  let run: () => Promise<number>
  if (side === "raw") {
    const client = new RawClient(rawOptions(endpoint, 0))
    run = async () => {
      if (client["token"] === undefined) await client.fetchToken()
      let failures = 0
      await pool(quotes, 64, () => client.getQuote(card).catch(() => failures++))
      return failures
    }
  } else {
    const program = Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
      Effect.map(
        Effect.forEach(Array.from({ length: quotes }), () => Effect.result(poller.getQuote(card)), {
          concurrency: 64
        }),
        (results) => results.filter((result) => result._tag === "Failure").length
      )).pipe(
        Effect.provide(
          pollerLayer(endpoint, { http: side === "platform" ? NodeHttpClient.layerUndici : UndiciClient.layer })
        )
      )
    run = () => Effect.runPromise(program)
  }
  let counts: { operations: number; fibers: number } | undefined
  let queue = Promise.resolve()
  Readline.createInterface({ input: process.stdin }).on("line", (line) => {
    queue = queue.then(async () => {
      if (line === "count" && side !== "raw") counts ??= countOperations()
      const operationsBefore = counts?.operations ?? 0
      const fibersBefore = counts?.fibers ?? 0
      const cpu = process.cpuUsage()
      const { bytes, value: failures } = await allocatedDuring(run)
      const used = process.cpuUsage(cpu)
      const figures: Figures = {
        cpuMicros: (used.user + used.system) / quotes,
        allocatedBytes: bytes / quotes,
        operations: counts === undefined ? undefined : (counts.operations - operationsBefore) / quotes,
        fibers: counts === undefined ? undefined : (counts.fibers - fibersBefore) / quotes,
        failures
      }
      process.stdout.write(`RESULT ${JSON.stringify(figures)}\n`)
    })
  })
}

const option = (name: string, fallback: string): string => {
  const index = process.argv.indexOf(`--${name}`)
  return index >= 0 ? process.argv[index + 1]! : fallback
}

const main = async () => {
  const quotes = Number(option("quotes", "5000"))
  const rounds = Number(option("rounds", "4"))
  const sides = option("sides", "raw,undici").split(",")
  const profiled = option("cpu-prof", "")
  const sandbox = await SandboxProcess.start([{ timeScale: 1 }])
  fs.mkdirSync(inBench("tmp"), { recursive: true })
  const processes = sides.map((side) => {
    const flags = side === profiled ? ["--cpu-prof", "--cpu-prof-dir", inBench("tmp")] : []
    const process_ = ChildProcess.spawn(
      process.execPath,
      [
        ...flags,
        "--import",
        "tsx",
        inBench("profile", "quote-cost.ts"),
        "child",
        JSON.stringify(sandbox.endpoint),
        side,
        String(quotes)
      ],
      { cwd: rootDir, stdio: ["pipe", "pipe", "inherit"] }
    )
    const waiting: Array<(figures: Figures) => void> = []
    Readline.createInterface({ input: process_.stdout }).on("line", (line) => {
      if (line.startsWith("RESULT ")) waiting.shift()?.(JSON.parse(line.slice(7)) as Figures)
    })
    const ask = (command: string) =>
      new Promise<Figures>((resolve) => {
        waiting.push(resolve)
        process_.stdin.write(`${command}\n`)
      })
    return { side, process: process_, ask }
  })
  const results = new Map<string, Array<Figures>>(sides.map((side) => [side, []]))
  const counted = new Map<string, Figures>()
  try {
    for (let warm = 0; warm < 2; warm++) for (const side of processes) await side.ask("run")
    for (let index = 0; index < rounds; index++) {
      const order = index % 2 === 0 ? processes : [...processes].reverse()
      for (const side of order) {
        await Admin.reset(sandbox.endpoint)
        const figures = await side.ask("run")
        results.get(side.side)!.push(figures)
        console.log(`round ${index + 1} ${side.side}: ${JSON.stringify(figures)}`)
      }
    }
    for (const side of processes) if (side.side !== "raw") counted.set(side.side, await side.ask("count"))
  } finally {
    for (const side of processes) side.process.stdin.end()
    await Promise.all(processes.map((side) => new Promise((done) => side.process.once("exit", done))))
    await sandbox.stop()
  }
  const summary = Object.fromEntries(sides.map((side) => {
    const runs = results.get(side)!
    return [side, {
      cpuMicrosPerQuote: round(median(runs.map((run) => run.cpuMicros)), 1),
      allocatedBytesPerQuote: Math.round(median(runs.map((run) => run.allocatedBytes))),
      operationsPerQuote: counted.get(side)?.operations,
      fibersPerQuote: counted.get(side)?.fibers,
      failures: runs.reduce((sum, run) => sum + run.failures, 0)
    }]
  }))
  console.log(JSON.stringify({ quotes, rounds, summary }, null, 2))
}

if (process.argv[2] === "child") {
  child(JSON.parse(process.argv[3]!) as Endpoint, process.argv[4]!, Number(process.argv[5]))
} else {
  void main()
}
