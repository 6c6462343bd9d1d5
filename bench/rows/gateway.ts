/**
 * Row 9, `gcx serve`: what the HTTP gateway costs over the durable engine it
 * serves, and what an open event stream holds.
 *
 * One embedded deployment in a process of its own (`gateway-side.ts`, which
 * composes `internal/gatewayDeployment.ts`: `Gateway.layer` over
 * `Embedded.layerQuotes`, SQLite in a temporary file, no webhook endpoint),
 * pinned to CPU 0; one sandbox in its own process and each run's callers, on
 * CPU 1. Three sides on that same deployment, same quotes, same concurrency,
 * the instant card:
 * - in-process: `DurableQuotes.execute` called in the deployment's process;
 * - through the gateway, the like of `execute` (submit, and answer the
 *   outcome): callers in a child process of their own (`gateway-client.ts`,
 *   plain `fetch`), one `POST /v1/quotes` with an `Idempotency-Key` and
 *   `Prefer: wait=30`, answered 200 with the quote once it has ended;
 * - through the gateway, two requests a quote: the POST without the
 *   preference, then the quote's server-sent events
 *   (`GET /v1/quotes/{id}/events`) read to the terminal event.
 * Warm-up rounds, then measured rounds, the sides next to each other in
 * alternating order. Throughput is each side's quotes/s (goal: the waiting
 * POST ≥ 0.8 of in-process, the median of the rounds' ratios; the two
 * requests' ratio reported beside it). CPU is the
 * deployment's process's (the gateway and the engine; the callers' CPU is
 * their own process's, reported apart): the gateway's CPU per quote is the
 * gateway side's minus the in-process side's, the median of the rounds'
 * differences. A quote that fails ends the row: its figures would measure
 * failures. A waiting POST answered 202 (its quote not ended within the
 * wait) is followed by its stream and counted apart, named in the row's
 * notes: that quote took two requests.
 *
 * The floor, after each measured round's sides: as many pairs of
 * `GET /healthz` as quotes, from a child's callers, and the deployment's CPU
 * per pair: what the platform (Node's HTTP server, Effect's router and
 * `HttpApi`, the gateway's global middleware) costs under the two requests
 * of a quote by POST and SSE, without a key, a path or header schema or the
 * database. In-process CPU ÷ (in-process + that pair) is that side's
 * throughput ratio's ceiling if the gateway's own requests cost no more (the
 * deployment is CPU-bound on all sides); its CPU beyond the pair is the
 * gateway's own handling (authentication, schemas, the submit, the event
 * stream). The waiting POST's ceiling is in-process ÷ (in-process + half a
 * pair).
 *
 * Open streams, on a second deployment of their own in this process (whose
 * heap is the one measured): `streams` quotes on the slow card (pending for 10 minutes:
 * the sandbox runs at timeScale 20, which leaves the instant card instant),
 * then one event stream per quote held open by the child; this process's
 * heap and RSS after full collections, before and with every stream open
 * (goal: ≤ 20 KB of heap per stream), and after they are dropped; in a
 * full run, two heap snapshots (streams open, then dropped) name what each
 * open stream holds.
 */
import { TestData } from "@gcx/sandbox"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import * as PgTest from "../../packages/workflow/test/utils/postgres.js"
import * as Admin from "../internal/Admin.js"
import * as Affinity from "../internal/affinity.js"
import * as Child from "../internal/child.js"
import type { Run } from "../internal/durableSides.js"
import { cpuOf, figures, sideRun } from "../internal/durableSides.js"
import * as GatewayDeployment from "../internal/gatewayDeployment.js"
import type { Target } from "../internal/gatewayHttp.js"
import * as GatewayHttp from "../internal/gatewayHttp.js"
import { instantCard } from "../internal/gcx.js"
import * as HeapDiff from "../internal/heapDiff.js"
import { inBench } from "../internal/paths.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import * as SideProcess from "../internal/sideProcess.js"
import { median, round } from "../internal/stats.js"
import type { HealthResult, HealthSettings, LoadResult, LoadSettings, StreamsResult } from "./gateway-client.js"
import type { GatewaySideOptions } from "./gateway-side.js"

const client = inBench("rows", "gateway-client.ts")

const concurrency = 32

/** The wait a POST of the waiting side asks for (`Prefer: wait`): far above a quote's latency under load. */
const waitSeconds = 30

/** A child of `gateway-client.ts` for the life of `use`, on CPU `cpu` when given, killed after. */
const withClient = <A>(
  args: ReadonlyArray<string>,
  use: (child: Child.Interactive) => Promise<A>,
  cpu?: number | undefined
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => Child.interactive("gateway client", client, args, cpu)),
    (child) =>
      Effect.tryPromise({ try: () => use(child), catch: (error) => error as Error }).pipe(
        // a deployment that stops answering ends the row rather than hanging it
        Effect.timeoutOrElse({
          duration: "10 minutes",
          orElse: () => Effect.fail(new Error("the gateway client did not finish within 10 minutes"))
        })
      ),
    (child) => Effect.promise(() => child.stop())
  )

/**
 * A child of `gateway-client.ts` (on CPU `cpu`) from its `READY`: `side`'s CPU from the child's
 * `GO` to its `END`, and the child's `RESULT`.
 */
const measuredClient = <R>(side: SideProcess.SideProcess, args: ReadonlyArray<string>, cpu: number | undefined) => {
  const cpuOfSide = () => side.send<{ readonly cpuMillis: number }>("cpu").then((answer) => answer.cpuMillis)
  return withClient(args, async (child) => {
    await child.expect("READY")
    const before = await cpuOfSide()
    child.send("GO")
    await child.expect("END")
    const cpuMillis = (await cpuOfSide()) - before
    return { cpuMillis, result: JSON.parse(await child.expect("RESULT")) as R }
  }, cpu)
}

/**
 * One measured run through `side`'s gateway: a child's callers (on CPU `cpu`), and the side's CPU
 * from their `GO` to their `END`.
 */
const gatewayRun = (
  endpoint: Endpoint,
  side: SideProcess.SideProcess,
  settings: LoadSettings,
  cpu: number | undefined
) =>
  Effect.gen(function*() {
    yield* Effect.promise(() => Admin.reset(endpoint))
    const { cpuMillis, result } = yield* measuredClient<LoadResult>(side, ["load", JSON.stringify(settings)], cpu)
    const journal = yield* Effect.promise(() => Admin.journal(endpoint))
    const { quotes, warmup } = settings
    return {
      quotesPerSecond: (quotes * 1000) / result.wallMillis,
      clientCpuMillisPerQuote: cpuMillis / quotes,
      serverCpuMillisPerQuote: undefined,
      // a waiting POST answered 202, then followed by its stream, completed too (named in the notes)
      failures: quotes - (result.outcomes.Completed ?? 0) - (result.outcomes[GatewayHttp.completedAfter202] ?? 0),
      // the sandbox was reset before the child's warm-up
      createQuoteRequests: journal.requests.createQuote - warmup,
      callersCpuMillisPerQuote: result.cpuMillis / quotes,
      outcomes: result.outcomes
    }
  })

/**
 * The platform's floor under the gateway's two requests per quote: `pairs`
 * pairs of `GET /healthz` from a child's callers (on CPU `cpu`), and `side`'s
 * CPU per pair from their `GO` to their `END`.
 */
const healthRun = (side: SideProcess.SideProcess, settings: HealthSettings, cpu: number | undefined) =>
  Effect.gen(function*() {
    const { cpuMillis, result } = yield* measuredClient<HealthResult>(
      side,
      ["health", JSON.stringify(settings)],
      cpu
    )
    if (result.failures > 0) return yield* Effect.die(new Error(`gateway floor: ${result.failures} /healthz failed`))
    return { cpuMillisPerPair: cpuMillis / settings.pairs, pairsPerSecond: (settings.pairs * 1000) / result.wallMillis }
  })

/** V8's full collection, reached without `--expose-gc` on the command line. */
const collector = (): () => void => {
  v8.setFlagsFromString("--expose-gc")
  return vm.runInNewContext("gc") as () => void
}

/** Heap and RSS after full collections until the heap is quiet. */
const settledMemory = async (gc: () => void) => {
  for (let index = 0; index < 4; index++) {
    gc()
    await new Promise((resolve) => setTimeout(resolve, 150))
  }
  const { heapUsed, rss } = process.memoryUsage()
  return { heapUsed, rss }
}

/**
 * What each open stream holds, by constructor: a heap snapshot with the
 * streams open, then one after they were dropped (`internal/heapDiff.ts`), in
 * `dir`. Taken after the memory readings they follow: writing a snapshot
 * grows the RSS for good.
 */
const snapshots = (dir: string) => {
  const files: Array<string> = []
  return {
    take: () => void files.push(v8.writeHeapSnapshot(path.join(dir, `streams-${files.length}.heapsnapshot`))),
    grew: (streams: number) => {
      const [during, after] = files.map(HeapDiff.counts)
      files.forEach((file) => fs.rmSync(file, { force: true }))
      // what gained at least one live node per stream
      return HeapDiff.diff(after!, during!, streams).slice(0, 15).map((growth) => ({
        ...growth,
        perStream: round((growth.after - growth.before) / streams, 1),
        selfBytesPerStream: round(growth.selfBytesAdded / streams, 0)
      }))
    }
  }
}

/**
 * `count` pending quotes, then one event stream per quote held open: this
 * process's memory before, with and after them; with `snapshotDir`, what grew.
 */
const openStreams = (target: Target, count: number, snapshotDir: string | undefined) =>
  withClient(
    [
      "streams",
      JSON.stringify({ target, card: { ...instantCard, cardNumber: TestData.Cards.slow }, runId: "streams", count })
    ],
    async (child) => {
      const gc = collector()
      const heap = snapshotDir === undefined ? undefined : snapshots(snapshotDir)
      const submitStarted = performance.now()
      const { submitted } = JSON.parse(await child.expect("SUBMITTED")) as { readonly submitted: number }
      const submitSeconds = (performance.now() - submitStarted) / 1000
      // let the engine start every quote and record its first events
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      const before = await settledMemory(gc)
      const openStarted = performance.now()
      child.send("OPEN")
      const { opened } = JSON.parse(await child.expect("OPENED")) as { readonly opened: number }
      const openSeconds = (performance.now() - openStarted) / 1000
      const during = await settledMemory(gc)
      heap?.take()
      child.send("CLOSE")
      const result = JSON.parse(await child.expect("RESULT")) as StreamsResult
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      const after = await settledMemory(gc)
      heap?.take()
      const grew = heap?.grew(opened) ?? []
      return { submitted, opened, submitSeconds, openSeconds, before, during, after, result, grew }
    }
  )

/** Runs row 9. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    // Long runs after warm-up rounds, the two sides in alternating order (rows 1 and 6 found a side's CPU per
    // quote falling over its first several thousand quotes, and runs of 600 were read cold)
    const quotes = context.quick ? 100 : 2_000
    // the callers' own warm-up, in each new child, before the measured quotes
    const warmup = context.quick ? 30 : 100
    const warmupRounds = context.quick ? 1 : 2
    const rounds = context.quick ? 1 : 5
    const streams = context.quick ? 200 : 1_000
    // the deployment on CPU 0, the sandbox and the callers on CPU 1, where they can be pinned
    const pinned = Affinity.available()
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 20 }], { cpu: pinned ? 1 : undefined })
    const endpoint = sandbox.endpoint
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "gcx-bench-gateway-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const dataKey = CardCipher.generateKey()

    type GatewayRun = Effect.Success<ReturnType<typeof gatewayRun>>
    const { gateway, health, inProcess, waiting } = yield* Effect.gen(function*() {
      const options: GatewaySideOptions = {
        endpoint,
        filename: path.join(dir, "throughput.db"),
        port: yield* PgTest.freePort,
        dataKey,
        concurrency
      }
      const side = yield* SideProcess.spawn(
        "gateway",
        inBench("rows", "gateway-side.ts"),
        [JSON.stringify(options)],
        pinned ? 0 : undefined
      )
      const target = yield* Effect.promise(() => side.send<Target>("target"))
      const throughGateway = (runId: string, waitSeconds?: number) =>
        gatewayRun(
          endpoint,
          side,
          {
            target,
            card: instantCard,
            runId,
            warmup,
            quotes,
            concurrency,
            ...(waitSeconds === undefined ? {} : { waitSeconds })
          },
          pinned ? 1 : undefined
        )
      const inProcess: Array<Run> = []
      const gateway: Array<GatewayRun> = []
      const waiting: Array<GatewayRun> = []
      const health: Array<Effect.Success<ReturnType<typeof healthRun>>> = []
      for (let round = 0; round < warmupRounds + rounds; round++) {
        const measured = round >= warmupRounds
        const label = measured
          ? `round ${round - warmupRounds + 1} of ${rounds}`
          : `warm-up ${round + 1}/${warmupRounds}`
        // the sides next to each other, in alternating order: none always runs on the fuller database
        const sides = ["inProcess", "waiting", "gateway"] as const
        for (const which of round % 2 === 0 ? sides : [...sides].reverse()) {
          if (which === "inProcess") {
            context.log(`gateway: ${label}, in-process DurableQuotes.execute`)
            const run = yield* sideRun(endpoint, side, quotes)
            if (measured) inProcess.push(run)
          } else if (which === "waiting") {
            context.log(`gateway: ${label}, through the gateway (one POST, Prefer: wait)`)
            const run = yield* throughGateway(`round-${round}-waiting`, waitSeconds)
            if (measured) waiting.push(run)
          } else {
            context.log(`gateway: ${label}, through the gateway (POST, then the SSE stream)`)
            const run = yield* throughGateway(`round-${round}`)
            if (measured) gateway.push(run)
          }
        }
        if (measured) {
          context.log(`gateway: ${label}, the floor: two GET /healthz a quote`)
          health.push(
            yield* healthRun(side, { target, warmup, pairs: quotes, concurrency }, pinned ? 1 : undefined)
          )
        }
      }
      return { inProcess, gateway, health, waiting }
    }).pipe(Effect.scoped)
    // a side whose quotes failed measures its failures, not the gateway: no figure from it
    for (const [side, runs] of [["in-process", inProcess], ["gateway", gateway], ["waiting", waiting]] as const) {
      const failed = runs.reduce((sum, run) => sum + run.failures, 0)
      if (failed > 0) return yield* Effect.die(new Error(`gateway ${side}: ${failed} quotes failed`))
    }

    /** A deployment of its own in this process, on a new database file and a free port, for the life of `use`. */
    const deployed = <A, E, R>(
      name: string,
      use: (target: Target) => Effect.Effect<A, E, R>
    ) =>
      Effect.flatMap(PgTest.freePort, (port) =>
        GatewayDeployment.createCaller("bench").pipe(
          Effect.flatMap((caller) => use({ baseUrl: GatewayDeployment.baseUrl(port), key: caller.key })),
          Effect.provide(GatewayDeployment.layer({ endpoint, filename: path.join(dir, `${name}.db`), port, dataKey })),
          Effect.scoped
        ))
    // in this process, whose heap is the one measured
    context.log(`gateway: ${fmt(streams)} pending quotes, then one event stream each, held open`)
    const held = yield* deployed("streams", (target) => openStreams(target, streams, context.quick ? undefined : dir))

    const medianOf = (runs: ReadonlyArray<Run>, f: (run: Run) => number) => median(runs.map(f))
    // each round's two sides ran next to each other: a ratio or a difference is the median of the rounds'
    const paired = (combine: (gateway: Run, inProcess: Run) => number, through: ReadonlyArray<Run> = gateway) =>
      median(through.map((run, index) => combine(run, inProcess[index]!)))
    const inProcessQps = medianOf(inProcess, (run) => run.quotesPerSecond)
    const gatewayQps = medianOf(gateway, (run) => run.quotesPerSecond)
    const inProcessCpu = medianOf(inProcess, cpuOf)
    const gatewayCpu = medianOf(gateway, cpuOf)
    const gatewayOwnCpu = paired((through, direct) => cpuOf(through) - cpuOf(direct))
    const cpuRatio = paired((through, direct) => cpuOf(through) / cpuOf(direct))
    const callersCpu = median(gateway.map((run) => run.callersCpuMillisPerQuote))
    const throughputRatioOf = (through: ReadonlyArray<Run>) =>
      round(paired((run, direct) => run.quotesPerSecond / direct.quotesPerSecond, through), 3)
    const streamThroughputRatio = throughputRatioOf(gateway)
    const throughputRatio = throughputRatioOf(waiting)
    const waitingQps = medianOf(waiting, (run) => run.quotesPerSecond)
    const waitingCpu = medianOf(waiting, cpuOf)
    const waitingOwnCpu = paired((through, direct) => cpuOf(through) - cpuOf(direct), waiting)
    // the floor: what two /healthz cost per quote, and the throughput ratio's ceiling if they were all the gateway added
    const healthCpu = median(health.map((run) => run.cpuMillisPerPair))
    const throughputCeiling = round(
      median(inProcess.map((run, index) => cpuOf(run) / (cpuOf(run) + health[index]!.cpuMillisPerPair))),
      3
    )
    const waitingCeiling = round(
      median(inProcess.map((run, index) => cpuOf(run) / (cpuOf(run) + health[index]!.cpuMillisPerPair / 2))),
      3
    )
    const gatewayHandlingCpu = median(
      gateway.map((run, index) => cpuOf(run) - cpuOf(inProcess[index]!) - health[index]!.cpuMillisPerPair)
    )
    const perStream = (key: "heapUsed" | "rss") => (held.during[key] - held.before[key]) / held.opened
    const heapPerStream = round(perStream("heapUsed"), 0)
    const rssPerStream = round(perStream("rss"), 0)
    const kb = (bytes: number) => fmt(bytes / 1024, 1)
    return {
      number: 9,
      id: "gateway",
      title: "Gateway",
      baseline: "DurableQuotes.execute in-process on the same embedded deployment, same run",
      params: {
        quotes,
        warmup,
        concurrency,
        warmupRounds,
        rounds,
        statistic: "medians of the rounds; ratios and the gateway's CPU: medians of the rounds' ratios and differences",
        order: "in-process, the waiting POST, then POST + SSE; the reverse in the next round, alternating",
        card: "instant",
        outcome: "the waiting POST's 200 (Prefer: wait); the quote's SSE stream (GET /v1/quotes/{id}/events) read " +
          "to its terminal event",
        webhooks: "none",
        deployment: "embedded (SQLite in a temporary file), gateway and engine in a process of their own " +
          "(rows/gateway-side.ts), both sides on it; the streams on a second deployment in the bench process",
        processes: "the deployment pinned to CPU 0, the sandbox and the callers to CPU 1, where taskset exists",
        callers: "a child process per run, plain fetch (undici), one connection per request in flight",
        cpu: "the deployment's process (gateway + engine); the gateway's per quote = gateway side − in-process side",
        floor: "each measured round, after its sides: as many pairs of GET /healthz as quotes, from a child's " +
          "callers at the same concurrency, the deployment's CPU per pair",
        streams,
        streamCard: "slow (timeScale 20: pending 10 minutes)"
      },
      figures: {
        inProcess: inProcess.map((run) => figures(run)),
        gateway: gateway.map((run) => ({
          ...figures(run),
          callersCpuMillisPerQuote: round(run.callersCpuMillisPerQuote, 3),
          outcomes: run.outcomes
        })),
        waiting: waiting.map((run) => ({
          ...figures(run),
          callersCpuMillisPerQuote: round(run.callersCpuMillisPerQuote, 3),
          outcomes: run.outcomes
        })),
        inProcessQuotesPerSecond: round(inProcessQps, 1),
        gatewayQuotesPerSecond: round(gatewayQps, 1),
        waitingQuotesPerSecond: round(waitingQps, 1),
        throughputRatio,
        streamThroughputRatio,
        waitingSideCpuMillisPerQuote: round(waitingCpu, 3),
        waitingCpuMillisPerQuote: round(waitingOwnCpu, 3),
        inProcessCpuMillisPerQuote: round(inProcessCpu, 3),
        gatewaySideCpuMillisPerQuote: round(gatewayCpu, 3),
        gatewayCpuMillisPerQuote: round(gatewayOwnCpu, 3),
        callersCpuMillisPerQuote: round(callersCpu, 3),
        floor: {
          rounds: health.map((run) => ({
            cpuMillisPerPair: round(run.cpuMillisPerPair, 3),
            pairsPerSecond: round(run.pairsPerSecond, 0)
          })),
          healthzPairCpuMillis: round(healthCpu, 3),
          throughputCeiling,
          waitingThroughputCeiling: waitingCeiling,
          gatewayHandlingCpuMillisPerQuote: round(gatewayHandlingCpu, 3)
        },
        streams: {
          ...held,
          heapBytesPerStream: heapPerStream,
          rssBytesPerStream: rssPerStream,
          heapBytesReleasedPerStream: round((held.during.heapUsed - held.after.heapUsed) / held.opened, 0)
        }
      },
      lines: [
        {
          measure: `quotes/s through the gateway, one POST that waits for the outcome (Prefer: wait=${waitSeconds}, ` +
            `200 with the quote; ${fmt(quotes)} quotes, concurrency ${concurrency}, instant card, medians of ` +
            `${rounds} rounds; ratio: median of the rounds'; the gateway's CPU +${fmt(waitingOwnCpu, 2)} ms a ` +
            "quote); baseline: DurableQuotes.execute in-process",
          gcx: fmt(waitingQps),
          baseline: fmt(inProcessQps),
          ratio: fmt(throughputRatio, 2),
          goal: "gateway.throughput"
        },
        {
          measure: "quotes/s through the gateway, POST, then its SSE stream to the outcome (two requests a quote; " +
            "same rounds); baseline: DurableQuotes.execute in-process",
          gcx: fmt(gatewayQps),
          baseline: fmt(inProcessQps),
          ratio: fmt(streamThroughputRatio, 2)
        },
        {
          measure:
            "CPU ms per quote of the gateway's process, POST then SSE (gateway + engine; the callers' own process: " +
            `${fmt(callersCpu, 2)}); baseline: in-process (+${
              fmt(gatewayOwnCpu, 2)
            } ms for the gateway, the median of the rounds' differences)`,
          gcx: fmt(gatewayCpu, 2),
          baseline: fmt(inProcessCpu, 2),
          ratio: fmt(cpuRatio, 2)
        },
        {
          measure: "the platform's floor under the two requests of a quote by POST + SSE: the deployment's CPU ms " +
            "for two GET /healthz (Node's HTTP server, Effect's router and HttpApi, the gateway's global " +
            "middleware; no key, no path or header schema, no database), beside the in-process quote; ratio: " +
            "POST + SSE's throughput ceiling if the gateway's requests cost no more, in-process CPU ÷ " +
            "(in-process + the two), the deployment being CPU-bound (the waiting POST's, with one: " +
            `${fmt(waitingCeiling, 2)}; the gateway's own handling of POST + SSE: +${
              fmt(gatewayHandlingCpu, 2)
            } ms a quote beyond the two, the median of the rounds')`,
          gcx: fmt(healthCpu, 2),
          baseline: fmt(inProcessCpu, 2),
          ratio: fmt(throughputCeiling, 2)
        },
        {
          measure: `heap KB per open event stream (${fmt(held.opened)} held open on pending quotes; ` +
            `RSS ${kb(rssPerStream)} KB per stream)`,
          gcx: kb(heapPerStream),
          baseline: "-",
          ratio: "-",
          goal: "gateway.streamMemory"
        }
      ],
      goals: [
        goal(
          "gateway.throughput",
          "quotes/s through the gateway (one POST that waits) ÷ DurableQuotes.execute in-process, same deployment",
          ">=",
          0.8,
          throughputRatio
        ),
        goal("gateway.streamMemory", "heap bytes per open event stream, KB", "<=", 20, round(heapPerStream / 1024, 1))
      ],
      notes: [
        ...waiting.flatMap((run, index) => {
          const twice = run.outcomes[GatewayHttp.completedAfter202] ?? 0
          return twice === 0 ? [] : [`waiting POST, round ${index + 1}: ${twice} quotes answered 202, then followed`]
        }),
        ...(held.opened === streams && held.result.endedEarly === 0
          ? []
          : [`streams: ${held.opened} of ${streams} opened, ${held.result.endedEarly} ended early`]),
        ...(held.grew.length === 0 ? [] : [
          `per open stream (heap snapshots): ${
            held.grew.slice(0, 8).map((growth) =>
              `${growth.name} ×${growth.perStream} (${growth.selfBytesPerStream} B)`
            )
              .join(", ")
          }`
        ])
      ],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
