/**
 * Row 1, throughput: quotes on the instant card (the POST answers completed,
 * no latency) through `QuotePoller.getQuote`, against the raw-fetch client
 * doing the same protocol, side by side on one sandbox process. Each side runs
 * in a process of its own (`throughput-side.ts`), warmed up first, then
 * measured in alternating rounds with the sandbox reset between, in runs of
 * 20,000 quotes for the sides that goals compare (5,000 for the others); the
 * medians of the rounds are reported. Where
 * `taskset` is available the sandbox runs on one core and the sides on the
 * other, as a client and its service on two hosts (unpinned, the kernel's
 * placement of the two processes moved a run's throughput by ±20 %). The headline
 * and the goal: `getQuote` over gcx's `UndiciClient`, what gcx's Node entry
 * points provide. For information: the same over Effect's
 * `NodeHttpClient.layerUndici` (the platform's undici client) and over
 * `FetchHttpClient` (the portable choice), and the exchange client alone
 * (`ExchangeClient.createQuote`, no poller), which tells how the cost splits
 * between the client and the poller.
 * And `getQuote` over undici with metrics and tracing exported
 * (`@gcx/http/Telemetry`, OTLP to a no-op receiver in a process of its own,
 * beside the sandbox, as a collector), compared with the undici side. Goals (the issue's): quotes/s ≥ 0.95 of raw,
 * client CPU per quote ≤ 1.1× raw's, telemetry's CPU ≤ 1.1× without.
 */
import * as Effect from "effect/Effect"
import * as Admin from "../internal/Admin.js"
import * as Affinity from "../internal/affinity.js"
import * as Cpu from "../internal/cpu.js"
import * as Host from "../internal/host.js"
import { inBench } from "../internal/paths.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import * as SideProcess from "../internal/sideProcess.js"
import { median, round } from "../internal/stats.js"
import type { Side } from "./throughput-side.js"

/** One measured run of one side. */
interface Run {
  readonly quotesPerSecond: number
  readonly clientCpuMillisPerQuote: number
  readonly serverCpuMillisPerQuote: number | undefined
  readonly failures: number
  readonly tokenRequests: number
  readonly createQuoteRequests: number
}

/** Starts the process of one side (on CPU `cpu` when given); it stops when the scope closes (`SideProcess.spawn`). */
const sideProcess = (
  endpoint: Endpoint,
  side: Side,
  quotes: number,
  concurrency: number,
  cpu: number | undefined,
  otlpUrl: string
) =>
  SideProcess.spawn(
    side,
    inBench("rows", "throughput-side.ts"),
    [JSON.stringify(endpoint), side, String(quotes), String(concurrency), otlpUrl],
    cpu
  )

const runOnce = async (
  sandbox: SandboxProcess.SandboxProcess,
  quotes: number,
  side: SideProcess.SideProcess
): Promise<Run> => {
  await Admin.reset(sandbox.endpoint)
  const serverBefore = Cpu.processMillis(sandbox.pid)
  const measured = await side.send<SideProcess.SideRun>("run")
  const serverAfter = Cpu.processMillis(sandbox.pid)
  const journal = await Admin.journal(sandbox.endpoint)
  return {
    ...SideProcess.perQuote(measured, quotes, serverBefore, serverAfter),
    tokenRequests: journal.requests.token,
    createQuoteRequests: journal.requests.createQuote
  }
}

const medianOf = (runs: ReadonlyArray<Run>, pick: (run: Run) => number | undefined): number | undefined => {
  const values = runs.map(pick).filter((value): value is number => value !== undefined)
  return values.length === 0 ? undefined : median(values)
}

const sideFigures = (runs: ReadonlyArray<Run>) => ({
  quotesPerSecond: round(medianOf(runs, (run) => run.quotesPerSecond)!, 1),
  clientCpuMillisPerQuote: round(medianOf(runs, (run) => run.clientCpuMillisPerQuote)!, 3),
  serverCpuMillisPerQuote: round(medianOf(runs, (run) => run.serverCpuMillisPerQuote) ?? Number.NaN, 3),
  failures: runs.reduce((sum, run) => sum + run.failures, 0),
  rounds: runs.map((run) => ({
    quotesPerSecond: round(run.quotesPerSecond, 1),
    clientCpuMillisPerQuote: round(run.clientCpuMillisPerQuote, 3),
    serverCpuMillisPerQuote: run.serverCpuMillisPerQuote === undefined ? null : round(run.serverCpuMillisPerQuote, 3),
    tokenRequests: run.tokenRequests,
    createQuoteRequests: run.createQuoteRequests
  }))
})

/** Runs row 1. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    // The sides that goals compare make long runs: over runs of 2,000 or 3,000 quotes (about a second),
    // garbage collections and the two processes' batching moved a side's CPU per quote by ±20 % from one run
    // to the next; over 20,000, adjacent runs agree within a few per cent. The sides for information, shorter.
    const quotes = context.quick ? 200 : 20_000
    const informationQuotes = context.quick ? 200 : 5_000
    const quotesOf = (side: Side) =>
      side === "raw" || side === "undici" || side === "telemetry" ? quotes : informationQuotes
    const concurrency = 64
    const warmupRounds = context.quick ? 1 : 2
    const rounds = context.quick ? 1 : 5
    // the sandbox on CPU 1, the sides on CPU 0, where they can be pinned
    const pinned = Affinity.available()
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 1 }], { cpu: pinned ? 1 : undefined })
    // the telemetry side's collector: a no-op receiver beside the sandbox, not in the client's process
    const collector = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          Host.start("the OTLP receiver", inBench("internal", "otlp-host.ts"), [], { cpu: pinned ? 1 : undefined }),
        catch: (error) => error as Error
      }),
      (host) => Effect.promise(() => host.stop())
    )
    const start = (side: Side) =>
      sideProcess(sandbox.endpoint, side, quotesOf(side), concurrency, pinned ? 0 : undefined, collector.ready)
    const sides = {
      gcx: yield* start("gcx"),
      raw: yield* start("raw"),
      client: yield* start("client"),
      undici: yield* start("undici"),
      platform: yield* start("platform"),
      telemetry: yield* start("telemetry")
    }
    const sideNames = Object.keys(sides) as ReadonlyArray<Side>
    const measured = yield* Effect.promise(async () => {
      for (let round = 0; round < warmupRounds; round++) {
        context.log(`throughput: warm-up ${round + 1}/${warmupRounds}`)
        for (const side of sideNames) await runOnce(sandbox, quotesOf(side), sides[side])
      }
      const runs = {
        gcx: [] as Array<Run>,
        raw: [] as Array<Run>,
        client: [] as Array<Run>,
        undici: [] as Array<Run>,
        platform: [] as Array<Run>,
        telemetry: [] as Array<Run>
      }
      for (let round = 0; round < rounds; round++) {
        // The sides that goals compare run next to each other (raw, undici, telemetry), in alternating
        // order, so that no side always follows the same one; the sides for information after them.
        const order = round % 2 === 0
          ? ["raw", "undici", "telemetry", "gcx", "platform", "client"] as const
          : ["telemetry", "undici", "raw", "client", "platform", "gcx"] as const
        for (const side of order) {
          const result = await runOnce(sandbox, quotesOf(side), sides[side])
          runs[side].push(result)
          context.log(
            `throughput: round ${round + 1}/${rounds} ${side}: ${fmt(result.quotesPerSecond)} quotes/s, ` +
              `${fmt(result.clientCpuMillisPerQuote, 2)} client CPU ms/quote`
          )
        }
      }
      // Each round's sides ran back to back on the same machine state: compare them round by round.
      const paired = (side: ReadonlyArray<Run>, baseline: ReadonlyArray<Run> = runs.raw) =>
        round(median(side.map((run, index) => run.quotesPerSecond / baseline[index]!.quotesPerSecond)), 3)
      const pairedCpu = (side: ReadonlyArray<Run>, baseline: ReadonlyArray<Run>) =>
        round(
          median(side.map((run, index) => run.clientCpuMillisPerQuote / baseline[index]!.clientCpuMillisPerQuote)),
          3
        )
      return {
        gcx: sideFigures(runs.gcx),
        raw: sideFigures(runs.raw),
        client: sideFigures(runs.client),
        undici: sideFigures(runs.undici),
        platform: sideFigures(runs.platform),
        telemetry: sideFigures(runs.telemetry),
        ratio: paired(runs.gcx),
        clientRatio: paired(runs.client),
        undiciRatio: paired(runs.undici),
        platformRatio: paired(runs.platform),
        platformCpuRatio: pairedCpu(runs.platform, runs.raw),
        telemetryRatio: paired(runs.telemetry, runs.undici),
        undiciCpuRatio: pairedCpu(runs.undici, runs.raw),
        telemetryCpuRatio: pairedCpu(runs.telemetry, runs.undici)
      }
    })
    const ratio = measured.ratio
    const cpuRatio = round(measured.gcx.clientCpuMillisPerQuote / measured.raw.clientCpuMillisPerQuote, 2)
    return {
      number: 1,
      id: "throughput",
      title: "Throughput",
      baseline: "raw fetch client (bench/baseline/RawClient.ts)",
      params: {
        quotes,
        informationQuotes,
        concurrency,
        card: "instant",
        warmupRounds,
        rounds,
        statistic: "medians of the rounds; ratios: median of the per-round ratios",
        processes: "each side in a process of its own (throughput-side.ts), the sandbox in another",
        cpus: pinned ? "the sandbox pinned to CPU 1, the sides to CPU 0 (taskset)" : "not pinned (no taskset)",
        order: "raw, undici and telemetry next to each other, in alternating order; then gcx, platform, client"
      },
      figures: {
        gcx: measured.gcx,
        raw: measured.raw,
        exchangeClientOnly: measured.client,
        ratio,
        exchangeClientOnlyRatio: measured.clientRatio,
        undici: measured.undici,
        undiciRatio: measured.undiciRatio,
        platform: measured.platform,
        platformRatio: measured.platformRatio,
        platformCpuRatio: measured.platformCpuRatio,
        telemetry: measured.telemetry,
        telemetryRatio: measured.telemetryRatio,
        clientCpuRatio: cpuRatio,
        undiciCpuRatio: measured.undiciCpuRatio,
        telemetryCpuRatio: measured.telemetryCpuRatio
      },
      lines: [
        {
          measure: `quotes/s, getQuote over gcx's UndiciClient (${
            fmt(quotes)
          } quotes, concurrency ${concurrency}, instant card)`,
          gcx: fmt(measured.undici.quotesPerSecond),
          baseline: fmt(measured.raw.quotesPerSecond),
          ratio: fmt(measured.undiciRatio, 2),
          goal: "throughput.ratio"
        },
        {
          measure: "client CPU ms per quote, getQuote over gcx's UndiciClient (ratio: median of the rounds')",
          gcx: fmt(measured.undici.clientCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.clientCpuMillisPerQuote, 2),
          ratio: fmt(measured.undiciCpuRatio, 2),
          goal: "throughput.cpu"
        },
        {
          measure: "quotes/s, getQuote over Effect's NodeHttpClient.layerUndici (the platform's undici client; " +
            "for information)",
          gcx: fmt(measured.platform.quotesPerSecond),
          baseline: fmt(measured.raw.quotesPerSecond),
          ratio: fmt(measured.platformRatio, 2)
        },
        {
          measure: "client CPU ms per quote, getQuote over NodeHttpClient.layerUndici (ratio: median of the rounds')",
          gcx: fmt(measured.platform.clientCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.clientCpuMillisPerQuote, 2),
          ratio: fmt(measured.platformCpuRatio, 2)
        },
        {
          measure: "quotes/s, getQuote over FetchHttpClient (the portable choice; for information)",
          gcx: fmt(measured.gcx.quotesPerSecond),
          baseline: fmt(measured.raw.quotesPerSecond),
          ratio: fmt(ratio, 2)
        },
        {
          measure: "client CPU ms per quote, getQuote over FetchHttpClient",
          gcx: fmt(measured.gcx.clientCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.clientCpuMillisPerQuote, 2),
          ratio: fmt(cpuRatio, 2)
        },
        {
          measure: "quotes/s, ExchangeClient.createQuote alone (no poller, no events)",
          gcx: fmt(measured.client.quotesPerSecond),
          baseline: fmt(measured.raw.quotesPerSecond),
          ratio: fmt(measured.clientRatio, 2)
        },
        {
          measure: "client CPU ms per quote, ExchangeClient.createQuote alone",
          gcx: fmt(measured.client.clientCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.clientCpuMillisPerQuote, 2),
          ratio: fmt(measured.client.clientCpuMillisPerQuote / measured.raw.clientCpuMillisPerQuote, 2)
        },
        {
          measure: "client CPU ms per quote, getQuote over undici with metrics and tracing exported (OTLP to a " +
            "no-op receiver in a process of its own); baseline: the same getQuote without (ratio: median of the rounds')",
          gcx: fmt(measured.telemetry.clientCpuMillisPerQuote, 2),
          baseline: fmt(measured.undici.clientCpuMillisPerQuote, 2),
          ratio: fmt(measured.telemetryCpuRatio, 2),
          goal: "throughput.cpu.telemetry"
        },
        {
          measure: "quotes/s, getQuote over undici with metrics and tracing exported; baseline: without",
          gcx: fmt(measured.telemetry.quotesPerSecond),
          baseline: fmt(measured.undici.quotesPerSecond),
          ratio: fmt(measured.telemetryRatio, 2)
        },
        {
          measure: "sandbox CPU ms per quote (its own process)",
          gcx: fmt(measured.gcx.serverCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.serverCpuMillisPerQuote, 2),
          ratio: fmt(measured.gcx.serverCpuMillisPerQuote / measured.raw.serverCpuMillisPerQuote, 2)
        }
      ],
      // The headline is Node's client, what every Node entry point of gcx provides; FetchHttpClient has no goal.
      goals: [
        goal(
          "throughput.ratio",
          "gcx over its UndiciClient quotes/s ÷ raw quotes/s, median of the per-round ratios",
          ">=",
          0.95,
          measured.undiciRatio
        ),
        goal(
          "throughput.cpu",
          "gcx over its UndiciClient client CPU per quote ÷ raw's, median of the per-round ratios",
          "<=",
          1.1,
          measured.undiciCpuRatio
        ),
        goal(
          "throughput.cpu.telemetry",
          "getQuote over undici with metrics and tracing exported: client CPU per quote ÷ the same without, " +
            "median of the per-round ratios",
          "<=",
          1.1,
          measured.telemetryCpuRatio
        )
      ],
      notes: [
        "getQuote runs the whole engine: card validation, token provider, retry policy, schema decoding, " +
        "Submitted and Completed events on the bus, spans; the raw client only calls fetch and JSON.parse."
      ],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
