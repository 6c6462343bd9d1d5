/**
 * Row 5, the sandbox: GET status requests per second at 64 connections
 * against a bare node:http server that answers the same JSON, each in its own
 * process. The load comes from this process with plain `fetch` (64 workers,
 * keep-alive), the same for both; both servers are warmed up first, then
 * measured in alternating timed rounds.
 */
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { RawClient } from "../baseline/RawClient.js"
import * as Cpu from "../internal/cpu.js"
import { rawOptions } from "../internal/gcx.js"
import { inBench, rootDir } from "../internal/paths.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt } from "../internal/report.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { median, round } from "../internal/stats.js"

/** The bare server, in its own process, for the life of the scope. */
const bareServer = (bodyFile: string) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly process: ChildProcess.ChildProcess }, Error>((resume) => {
      const child = ChildProcess.spawn(process.execPath, [
        "--import",
        "tsx",
        inBench("internal", "bare-server.ts"),
        bodyFile
      ], {
        cwd: rootDir,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString()
        const match = /READY (\d+)/.exec(stdout)
        if (match !== null) resume(Effect.succeed({ port: Number(match[1]), process: child }))
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`the bare server exited (${code})`))))
      return Effect.sync(() => child.kill("SIGKILL"))
    }),
    ({ process }) => Effect.sync(() => process.kill("SIGKILL"))
  )

/** What one timed round measured. */
interface Round {
  readonly requestsPerSecond: number
  /** The load generator's CPU over the wall time: near 1 means it used a whole core. */
  readonly loadGeneratorCpuShare: number
  readonly serverCpuMillisPerRequest: number | undefined
  readonly errors: number
}

/** 64 workers sending the GET for `millis`; counts the answers. */
const load = async (
  url: string,
  headers: Record<string, string>,
  millis: number,
  pid: number,
  connections: number
): Promise<Round> => {
  let answered = 0
  let errors = 0
  const deadline = performance.now() + millis
  const measured = await Cpu.measure(pid, async () => {
    await Promise.all(Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        try {
          const response = await fetch(url, { headers })
          await response.arrayBuffer()
          if (response.status === 200) answered++
          else errors++
        } catch {
          errors++
        }
      }
    }))
  })
  return {
    requestsPerSecond: (answered * 1000) / measured.wallMillis,
    loadGeneratorCpuShare: measured.clientCpuMillis / measured.wallMillis,
    serverCpuMillisPerRequest: measured.serverCpuMillis === undefined ? undefined : measured.serverCpuMillis / answered,
    errors
  }
}

const figures = (rounds: ReadonlyArray<Round>) => {
  const cpu = rounds.map((round) => round.serverCpuMillisPerRequest).filter((value): value is number =>
    value !== undefined
  )
  return {
    requestsPerSecond: round(median(rounds.map((round) => round.requestsPerSecond)), 0),
    serverCpuMillisPerRequest: cpu.length === 0 ? null : round(median(cpu), 3),
    errors: rounds.reduce((sum, round) => sum + round.errors, 0),
    loadGeneratorCpuShare: round(median(rounds.map((one) => one.loadGeneratorCpuShare)), 2),
    rounds: rounds.map((one) => ({
      requestsPerSecond: round(one.requestsPerSecond, 0),
      loadGeneratorCpuShare: round(one.loadGeneratorCpuShare, 2),
      serverCpuMillisPerRequest: one.serverCpuMillisPerRequest === undefined
        ? null
        : round(one.serverCpuMillisPerRequest, 3)
    }))
  }
}

/** Runs row 5. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    const connections = 64
    const warmupMillis = context.quick ? 500 : 3_000
    const roundMillis = context.quick ? 1_000 : 5_000
    const rounds = context.quick ? 1 : 3
    const sandbox = yield* SandboxProcess.scoped([{ timeScale: 1 }])
    const { endpoint } = sandbox

    // One completed transaction (the instant card) and the sandbox's own answer to its GET.
    const client = new RawClient(rawOptions(endpoint, 0))
    const { headers, transactionUrl } = yield* Effect.promise(async () => {
      const token = await client.fetchToken()
      const quote = await client.createQuote({
        cardNumber: "6006000000000019",
        pinNumber: "1234",
        productLineId: "1000"
      })
      return {
        transactionUrl: `${endpoint.baseUrl}/${endpoint.stage}/v3/exchange/quote/${quote.transactionId}`,
        headers: {
          authorization: `Bearer ${token}`,
          "x-api-key": rawOptions(endpoint, 0).apiKey,
          requestId: "0123456789abcdef0123456789abcdef",
          accept: "application/json"
        }
      }
    })
    const body = yield* Effect.promise(() => fetch(transactionUrl, { headers }).then((response) => response.text()))
    const bodyFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gcx-bench-")), "status.json")
    fs.writeFileSync(bodyFile, body)
    const bare = yield* bareServer(bodyFile)
    const bareUrl = `http://127.0.0.1:${bare.port}/${endpoint.stage}/v3/exchange/quote/x`

    const measured = yield* Effect.promise(async () => {
      context.log("sandbox: warm-up")
      await load(transactionUrl, headers, warmupMillis, sandbox.pid, connections)
      await load(bareUrl, headers, warmupMillis, bare.process.pid!, connections)
      const sandboxRounds: Array<Round> = []
      const bareRounds: Array<Round> = []
      for (let index = 0; index < rounds; index++) {
        const order = index % 2 === 0 ? ["sandbox", "bare"] as const : ["bare", "sandbox"] as const
        for (const side of order) {
          const result = side === "sandbox"
            ? await load(transactionUrl, headers, roundMillis, sandbox.pid, connections)
            : await load(bareUrl, headers, roundMillis, bare.process.pid!, connections)
          ;(side === "sandbox" ? sandboxRounds : bareRounds).push(result)
          context.log(`sandbox: round ${index + 1}/${rounds} ${side}: ${fmt(result.requestsPerSecond)} requests/s`)
        }
      }
      return { sandbox: figures(sandboxRounds), bare: figures(bareRounds) }
    })
    fs.rmSync(path.dirname(bodyFile), { recursive: true, force: true })
    const ratio = round(measured.sandbox.requestsPerSecond / measured.bare.requestsPerSecond, 3)
    // the share of one core the bare server used: CPU per request × requests per second
    const bareBusy = ((measured.bare.serverCpuMillisPerRequest ?? 0) * measured.bare.requestsPerSecond) / 1000
    return {
      number: 5,
      id: "sandbox",
      title: "Sandbox",
      baseline: "bare node:http server answering the same JSON (bench/internal/bare-server.ts)",
      params: { connections, roundMillis, rounds, warmupMillis, bodyBytes: Buffer.byteLength(body), load: "fetch" },
      figures: { sandbox: measured.sandbox, bare: measured.bare, ratio, bareServerBusyShare: round(bareBusy, 2) },
      lines: [
        {
          measure: `GET status requests/s at ${connections} connections`,
          gcx: `${fmt(measured.sandbox.requestsPerSecond)} (sandbox)`,
          baseline: fmt(measured.bare.requestsPerSecond),
          ratio: fmt(ratio, 2)
        },
        {
          measure: "server CPU ms per request",
          gcx: fmt(measured.sandbox.serverCpuMillisPerRequest ?? Number.NaN, 3),
          baseline: fmt(measured.bare.serverCpuMillisPerRequest ?? Number.NaN, 3),
          ratio: fmt(
            (measured.sandbox.serverCpuMillisPerRequest ?? Number.NaN) /
              (measured.bare.serverCpuMillisPerRequest ?? Number.NaN),
            2
          )
        }
      ],
      goals: [],
      notes: bareBusy < 0.5
        ? [
          `the bare server was busy ${fmt(bareBusy * 100)} % of one core (the load generator in this process, ` +
          `${
            fmt(measured.bare.loadGeneratorCpuShare * 100)
          } % of a core, limits it), so its requests/s is a floor and ` +
          `the requests/s ratio flatters the sandbox; server CPU per request compares the two servers themselves`
        ]
        : [],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
