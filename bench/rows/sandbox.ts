/**
 * Row 5, the sandbox: GET status requests per second at 64 connections
 * against a bare node:http server that answers the same JSON, each in its own
 * process. For information, the platform's floor is measured beside them: a
 * one-endpoint `HttpApi` (a path schema and a bearer security middleware,
 * `bench/ladder/server.ts api`) answering the same JSON. The load comes from
 * autocannon in a process of its own (64 keep-alive connections), the same
 * for all; the servers are warmed up first, then measured in alternating timed
 * rounds. The goal: at most 0.2 ms of sandbox CPU per request.
 */
import * as Effect from "effect/Effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { RawClient } from "../baseline/RawClient.js"
import * as Cpu from "../internal/cpu.js"
import { rawOptions } from "../internal/gcx.js"
import { inBench, rootDir } from "../internal/paths.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { median, round } from "../internal/stats.js"

/**
 * A step of `bench/ladder/server.ts` answering the JSON of `bodyFile`, in its
 * own process for the life of the scope.
 */
const ladderServer = (name: string, step: "bare" | "api", bodyFile: string) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly port: number; readonly process: ChildProcess.ChildProcess }, Error>((resume) => {
      const child = ChildProcess.spawn(process.execPath, [
        "--import",
        "tsx",
        inBench("ladder", "server.ts"),
        step,
        bodyFile
      ], {
        cwd: rootDir,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString()
        const match = /READY \{"port":(\d+)/.exec(stdout)
        if (match !== null) resume(Effect.succeed({ port: Number(match[1]), process: child }))
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`the ${name} exited (${code})`))))
      return Effect.sync(() => child.kill("SIGKILL"))
    }),
    ({ process }) => Effect.sync(() => process.kill("SIGKILL"))
  )

/** What one timed round measured. */
interface Round {
  readonly requestsPerSecond: number
  readonly serverCpuMillisPerRequest: number | undefined
  /** The server's CPU over the wall time: near 1 means it used a whole core. */
  readonly serverBusyShare: number | undefined
  readonly errors: number
}

/** What autocannon's `--json` reports (the fields used here). */
interface AutocannonResult {
  readonly "2xx": number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly duration: number
}

const autocannon = path.join(
  path.dirname(createRequire(import.meta.url).resolve("autocannon/package.json")),
  "autocannon.js"
)

/**
 * autocannon, in a process of its own, sending the GET on `connections`
 * keep-alive connections for `millis`; the server's CPU is read from /proc
 * around it.
 */
const load = async (
  url: string,
  headers: Record<string, string>,
  millis: number,
  pid: number,
  connections: number
): Promise<Round> => {
  const args = [
    autocannon,
    "--json",
    "--no-progress",
    "--connections",
    String(connections),
    "--duration",
    String(millis / 1000),
    ...Object.entries(headers).flatMap(([name, value]) => ["--headers", `${name}=${value}`]),
    url
  ]
  const measured = await Cpu.measure(pid, () =>
    new Promise<AutocannonResult>((resolve, reject) => {
      const child = ChildProcess.spawn(process.execPath, args, { cwd: rootDir, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk
      })
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr = (stderr + chunk).slice(-2_000)
      })
      const timer = setTimeout(() => child.kill("SIGKILL"), millis + 30_000)
      child.once("close", (code) => {
        clearTimeout(timer)
        if (code === 0) resolve(JSON.parse(stdout) as AutocannonResult)
        else reject(new Error(`autocannon exited with ${code}: ${stderr}`))
      })
    }))
  const result = measured.value
  const answered = result["2xx"]
  return {
    requestsPerSecond: (answered * 1000) / measured.wallMillis,
    serverCpuMillisPerRequest: measured.serverCpuMillis === undefined || answered === 0
      ? undefined
      : measured.serverCpuMillis / (answered + result.non2xx),
    serverBusyShare: measured.serverCpuMillis === undefined
      ? undefined
      : measured.serverCpuMillis / measured.wallMillis,
    errors: result.non2xx + result.errors + result.timeouts
  }
}

const defined = (values: ReadonlyArray<number | undefined>): Array<number> =>
  values.filter((value): value is number => value !== undefined)

const figures = (rounds: ReadonlyArray<Round>) => {
  const cpu = defined(rounds.map((round) => round.serverCpuMillisPerRequest))
  const busy = defined(rounds.map((round) => round.serverBusyShare))
  return {
    requestsPerSecond: round(median(rounds.map((round) => round.requestsPerSecond)), 0),
    serverCpuMillisPerRequest: cpu.length === 0 ? null : round(median(cpu), 3),
    serverBusyShare: busy.length === 0 ? null : round(median(busy), 2),
    errors: rounds.reduce((sum, round) => sum + round.errors, 0),
    rounds: rounds.map((one) => ({
      requestsPerSecond: round(one.requestsPerSecond, 0),
      serverBusyShare: one.serverBusyShare === undefined ? null : round(one.serverBusyShare, 2),
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
    const bare = yield* ladderServer("bare server", "bare", bodyFile)
    const floor = yield* ladderServer("HttpApi floor", "api", bodyFile)
    const targets = {
      sandbox: { url: transactionUrl, pid: sandbox.pid },
      floor: { url: `http://127.0.0.1:${floor.port}/v3/exchange/quote/x`, pid: floor.process.pid! },
      bare: { url: `http://127.0.0.1:${bare.port}/${endpoint.stage}/v3/exchange/quote/x`, pid: bare.process.pid! }
    }
    const sides = ["sandbox", "floor", "bare"] as const

    const measured = yield* Effect.promise(async () => {
      context.log("sandbox: warm-up")
      for (const side of sides) await load(targets[side].url, headers, warmupMillis, targets[side].pid, connections)
      const measuredRounds = { sandbox: [] as Array<Round>, floor: [] as Array<Round>, bare: [] as Array<Round> }
      for (let index = 0; index < rounds; index++) {
        // Each round starts with another side, so that none always runs first or last.
        const order = sides.map((_, offset) => sides[(index + offset) % sides.length]!)
        for (const side of order) {
          const result = await load(targets[side].url, headers, roundMillis, targets[side].pid, connections)
          measuredRounds[side].push(result)
          context.log(`sandbox: round ${index + 1}/${rounds} ${side}: ${fmt(result.requestsPerSecond)} requests/s`)
        }
      }
      return {
        sandbox: figures(measuredRounds.sandbox),
        floor: figures(measuredRounds.floor),
        bare: figures(measuredRounds.bare)
      }
    })
    fs.rmSync(path.dirname(bodyFile), { recursive: true, force: true })
    const ratio = round(measured.sandbox.requestsPerSecond / measured.bare.requestsPerSecond, 3)
    const cpu = (side: typeof sides[number]) => measured[side].serverCpuMillisPerRequest ?? Number.NaN
    const busy = (side: typeof sides[number]) => fmt((measured[side].serverBusyShare ?? Number.NaN) * 100)
    return {
      number: 5,
      id: "sandbox",
      title: "Sandbox",
      baseline: "bare node:http server answering the same JSON (bench/ladder/server.ts bare)",
      params: {
        connections,
        roundMillis,
        rounds,
        warmupMillis,
        bodyBytes: Buffer.byteLength(body),
        load: "autocannon, own process"
      },
      figures: { sandbox: measured.sandbox, httpApiFloor: measured.floor, bare: measured.bare, ratio },
      lines: [
        {
          measure: `GET status requests/s at ${connections} connections`,
          gcx: `${fmt(measured.sandbox.requestsPerSecond)} (sandbox)`,
          baseline: fmt(measured.bare.requestsPerSecond),
          ratio: fmt(ratio, 2)
        },
        {
          measure: "server CPU ms per request",
          goal: "sandbox.serverCpuMillisPerRequest",
          gcx: fmt(cpu("sandbox"), 3),
          baseline: fmt(cpu("bare"), 3),
          ratio: fmt(cpu("sandbox") / cpu("bare"), 2)
        },
        {
          measure: "server CPU ms per request of a one-endpoint `HttpApi` (path schema, bearer middleware; " +
            "`bench/ladder/server.ts api`): the platform's floor, for information",
          gcx: fmt(cpu("floor"), 3),
          baseline: fmt(cpu("bare"), 3),
          ratio: fmt(cpu("floor") / cpu("bare"), 2)
        }
      ],
      goals: [
        // The goal: ≤ 0.2 ms; when the floor of the same run is above 0.17 ms, ≤ 1.15× that floor.
        goal(
          "sandbox.serverCpuMillisPerRequest",
          cpu("floor") > 0.17
            ? "sandbox CPU ms per GET status request (≤ 1.15× the HttpApi floor of the run, which is above 0.17 ms)"
            : "sandbox CPU ms per GET status request",
          "<=",
          cpu("floor") > 0.17 ? round(1.15 * cpu("floor"), 3) : 0.2,
          measured.sandbox.serverCpuMillisPerRequest ?? Number.POSITIVE_INFINITY
        )
      ],
      notes: [
        `server busy share of one core: sandbox ${busy("sandbox")} %, HttpApi floor ${busy("floor")} %, ` +
        `bare ${busy("bare")} % (autocannon runs in a process of its own; ` +
        `on 2 cores it competes with the server for CPU)`
      ],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
