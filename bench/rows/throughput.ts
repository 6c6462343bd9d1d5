/**
 * Row 1, throughput: quotes on the instant card (the POST answers completed,
 * no latency) through `QuotePoller.getQuote`, against the raw-fetch client
 * doing the same protocol, side by side on one sandbox process. Both sides
 * are warmed up first (the JIT of both processes needs thousands of
 * requests), then measured in alternating rounds with the sandbox reset
 * between; the medians of the rounds are reported. A third side, the
 * exchange client alone (`ExchangeClient.createQuote`, no poller), tells how
 * the cost splits between the client and the poller.
 */
import type { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import { QuotePoller } from "@gcx/poller"
import { TestData } from "@gcx/sandbox"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import { RawClient } from "../baseline/RawClient.js"
import * as Admin from "../internal/Admin.js"
import * as Cpu from "../internal/cpu.js"
import { clientLayer, pollerLayer, rawOptions } from "../internal/gcx.js"
import { pool } from "../internal/pool.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { median, round } from "../internal/stats.js"

const card = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}

/** One measured run of one side. */
interface Run {
  readonly quotesPerSecond: number
  readonly clientCpuMillisPerQuote: number
  readonly serverCpuMillisPerQuote: number | undefined
  readonly failures: number
  readonly tokenRequests: number
  readonly createQuoteRequests: number
}

const gcxSide = (
  endpoint: Endpoint,
  quotes: number,
  concurrency: number,
  http?: Layer.Layer<HttpClient.HttpClient>
) =>
  Effect.gen(function*() {
    const poller = yield* QuotePoller.QuotePoller
    const outcomes = yield* Effect.forEach(
      Array.from({ length: quotes }),
      () => Effect.either(poller.getQuote(card)),
      { concurrency }
    )
    return outcomes.filter((outcome) => outcome._tag === "Left").length
  }).pipe(Effect.provide(pollerLayer(endpoint, { http })))

/** The exchange client alone: the same POSTs without the poller (no stream, no events, no bus). */
const clientSide = (endpoint: Endpoint, quotes: number, concurrency: number) =>
  Effect.gen(function*() {
    const client = yield* ExchangeClient.ExchangeClient
    const outcomes = yield* Effect.forEach(
      Array.from({ length: quotes }),
      () => Effect.either(client.createQuote(card)),
      { concurrency }
    )
    return outcomes.filter((outcome) => outcome._tag === "Left" || !outcome.right.quote.isCompleted).length
  }).pipe(Effect.provide(clientLayer(endpoint)))

const rawSide = async (endpoint: Endpoint, quotes: number, concurrency: number): Promise<number> => {
  const client = new RawClient(rawOptions(endpoint, 0))
  await client.fetchToken()
  let failures = 0
  await pool(quotes, concurrency, () => client.getQuote(card).catch(() => failures++))
  return failures
}

const runOnce = async (
  sandbox: SandboxProcess.SandboxProcess,
  quotes: number,
  side: () => Promise<number>
): Promise<Run> => {
  await Admin.reset(sandbox.endpoint)
  const measured = await Cpu.measure(sandbox.pid, side)
  const journal = await Admin.journal(sandbox.endpoint)
  return {
    quotesPerSecond: (quotes * 1000) / measured.wallMillis,
    clientCpuMillisPerQuote: measured.clientCpuMillis / quotes,
    serverCpuMillisPerQuote: measured.serverCpuMillis === undefined ? undefined : measured.serverCpuMillis / quotes,
    failures: measured.value,
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
    const quotes = context.quick ? 200 : 2_000
    const concurrency = 64
    const warmupRounds = context.quick ? 1 : 2
    const rounds = context.quick ? 1 : 5
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 1 }])
    const gcx = () => Effect.runPromise(gcxSide(sandbox.endpoint, quotes, concurrency))
    const raw = () => rawSide(sandbox.endpoint, quotes, concurrency)
    const client = () => Effect.runPromise(clientSide(sandbox.endpoint, quotes, concurrency))
    // The same getQuote over Node's undici dispatcher instead of Effect's fetch client.
    const undici = () => Effect.runPromise(gcxSide(sandbox.endpoint, quotes, concurrency, NodeHttpClient.layerUndici))
    const measured = yield* Effect.promise(async () => {
      for (let round = 0; round < warmupRounds; round++) {
        context.log(`throughput: warm-up ${round + 1}/${warmupRounds}`)
        await runOnce(sandbox, quotes, gcx)
        await runOnce(sandbox, quotes, raw)
        await runOnce(sandbox, quotes, client)
        await runOnce(sandbox, quotes, undici)
      }
      const runs = { gcx: [] as Array<Run>, raw: [] as Array<Run>, client: [] as Array<Run>, undici: [] as Array<Run> }
      const sides = { gcx, raw, client, undici }
      for (let round = 0; round < rounds; round++) {
        // Alternate the order, so that no side always follows the same one.
        const order = round % 2 === 0
          ? ["gcx", "raw", "client", "undici"] as const
          : ["undici", "client", "raw", "gcx"] as const
        for (const side of order) {
          const result = await runOnce(sandbox, quotes, sides[side])
          runs[side].push(result)
          context.log(
            `throughput: round ${round + 1}/${rounds} ${side}: ${fmt(result.quotesPerSecond)} quotes/s, ` +
              `${fmt(result.clientCpuMillisPerQuote, 2)} client CPU ms/quote`
          )
        }
      }
      // Each round's sides ran back to back on the same machine state: compare them round by round.
      const paired = (side: ReadonlyArray<Run>) =>
        round(median(side.map((run, index) => run.quotesPerSecond / runs.raw[index]!.quotesPerSecond)), 3)
      return {
        gcx: sideFigures(runs.gcx),
        raw: sideFigures(runs.raw),
        client: sideFigures(runs.client),
        undici: sideFigures(runs.undici),
        ratio: paired(runs.gcx),
        clientRatio: paired(runs.client),
        undiciRatio: paired(runs.undici)
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
        concurrency,
        card: "instant",
        warmupRounds,
        rounds,
        statistic: "medians of the rounds; ratios: median of the per-round ratios"
      },
      figures: {
        gcx: measured.gcx,
        raw: measured.raw,
        exchangeClientOnly: measured.client,
        ratio,
        exchangeClientOnlyRatio: measured.clientRatio,
        undici: measured.undici,
        undiciRatio: measured.undiciRatio,
        clientCpuRatio: cpuRatio
      },
      lines: [
        {
          measure: `quotes/s (${fmt(quotes)} quotes, concurrency ${concurrency}, instant card)`,
          gcx: fmt(measured.gcx.quotesPerSecond),
          baseline: fmt(measured.raw.quotesPerSecond),
          ratio: fmt(ratio, 2),
          goal: "throughput.ratio"
        },
        {
          measure: "client CPU ms per quote",
          gcx: fmt(measured.gcx.clientCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.clientCpuMillisPerQuote, 2),
          ratio: fmt(cpuRatio, 2)
        },
        {
          measure: "quotes/s, getQuote over NodeHttpClient.layerUndici",
          gcx: fmt(measured.undici.quotesPerSecond),
          baseline: fmt(measured.raw.quotesPerSecond),
          ratio: fmt(measured.undiciRatio, 2),
          goal: "throughput.ratio.undici"
        },
        {
          measure: "client CPU ms per quote, getQuote over NodeHttpClient.layerUndici",
          gcx: fmt(measured.undici.clientCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.clientCpuMillisPerQuote, 2),
          ratio: fmt(measured.undici.clientCpuMillisPerQuote / measured.raw.clientCpuMillisPerQuote, 2)
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
          measure: "sandbox CPU ms per quote (its own process)",
          gcx: fmt(measured.gcx.serverCpuMillisPerQuote, 2),
          baseline: fmt(measured.raw.serverCpuMillisPerQuote, 2),
          ratio: fmt(measured.gcx.serverCpuMillisPerQuote / measured.raw.serverCpuMillisPerQuote, 2)
        }
      ],
      goals: [
        goal("throughput.ratio", "gcx quotes/s ÷ raw quotes/s, median of the per-round ratios", ">=", 0.9, ratio),
        goal(
          "throughput.ratio.undici",
          "gcx over NodeHttpClient.layerUndici quotes/s ÷ raw quotes/s",
          ">=",
          0.9,
          measured.undiciRatio
        )
      ],
      notes: [
        "getQuote runs the whole engine: card validation, token provider, retry policy, schema decoding, " +
        "Submitted and Completed events on the bus, spans; the raw client only calls fetch and JSON.parse."
      ],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
