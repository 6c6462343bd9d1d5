/**
 * The callers of row 9, in a process of their own so that the gateway's
 * process counts only the gateway's CPU and memory. Plain `fetch`
 * (`internal/gatewayHttp.ts`), as a backend in any language would call
 * `gcx serve`. Two modes, each a line protocol with the parent
 * (`Child.interactive`):
 *
 * - `load <json>`: `warmup` quotes, then `READY`; on `GO`, `quotes` quotes at
 *   `concurrency` (POST with an Idempotency-Key, then the quote's event stream
 *   to its terminal event; with `waitSeconds`, one POST that waits for the
 *   outcome, `Prefer: wait`), `END`, and `RESULT <json>` (wall time, outcomes,
 *   this process's CPU).
 * - `health <json>`: the platform's floor beside `load`: `warmup` pairs of
 *   `GET /healthz` (no key, no path or header schema, no database), then `READY`; on `GO`,
 *   `pairs` pairs at `concurrency`, `END`, and `RESULT <json>` (wall time,
 *   failed requests, this process's CPU).
 * - `streams <json>`: submits `count` quotes (a card that stays pending),
 *   prints `SUBMITTED`, waits for `OPEN` on stdin, opens one event stream per
 *   quote and reads its first event, prints `OPENED` (all held open), waits
 *   for `CLOSE`, drops them all and prints `RESULT <json>`.
 *
 * Usage: node --import tsx bench/rows/gateway-client.ts load|health|streams <json>
 */
import * as readline from "node:readline"
import * as Cpu from "../internal/cpu.js"
import type { CardInput, Target } from "../internal/gatewayHttp.js"
import * as GatewayHttp from "../internal/gatewayHttp.js"
import { pool } from "../internal/pool.js"

/** The settings of `load`. */
export interface LoadSettings {
  readonly target: Target
  readonly card: CardInput
  readonly runId: string
  readonly warmup: number
  readonly quotes: number
  readonly concurrency: number
  /** The POST waits up to this many seconds for the outcome (`Prefer: wait`); none: POST, then the SSE stream. */
  readonly waitSeconds?: number
}

/** What `load` reports. */
export interface LoadResult {
  readonly wallMillis: number
  readonly cpuMillis: number
  readonly outcomes: Readonly<Record<string, number>>
}

/** The settings of `health`. */
export interface HealthSettings {
  readonly target: Target
  readonly warmup: number
  readonly pairs: number
  readonly concurrency: number
}

/** What `health` reports. */
export interface HealthResult {
  readonly wallMillis: number
  readonly cpuMillis: number
  readonly failures: number
}

/** The settings of `streams`. */
export interface StreamsSettings {
  readonly target: Target
  readonly card: CardInput
  readonly runId: string
  readonly count: number
}

/** What `streams` reports. */
export interface StreamsResult {
  readonly submitted: number
  readonly opened: number
  /** Streams that ended (terminal event, or closed by the server) before `CLOSE`: they were not held. */
  readonly endedEarly: number
  readonly events: number
  readonly failures: Readonly<Record<string, number>>
}

const print = (step: string, value?: unknown) =>
  console.log(value === undefined ? step : `${step} ${JSON.stringify(value)}`)

const stdinLines = readline.createInterface({ input: process.stdin })
const nextLine = (expected: string) =>
  new Promise<void>((resolve) => {
    const listener = (line: string) => {
      if (line.trim() !== expected) return
      stdinLines.off("line", listener)
      resolve()
    }
    stdinLines.on("line", listener)
  })

const count = (record: Record<string, number>, key: string) => (record[key] = (record[key] ?? 0) + 1)

/** Prints `READY`, then on `GO` runs `run`, prints `END`, and gives its wall time and this process's CPU. */
const fromGo = async (run: () => Promise<void>) => {
  print("READY")
  await nextLine("GO")
  const cpu = Cpu.selfMillis()
  const started = performance.now()
  await run()
  const wallMillis = performance.now() - started
  const cpuMillis = Cpu.selfMillis() - cpu
  print("END")
  return { wallMillis, cpuMillis }
}

const load = async (settings: LoadSettings): Promise<void> => {
  const { card, concurrency, quotes, runId, target, waitSeconds, warmup } = settings
  await pool(warmup, concurrency, (index) => GatewayHttp.quote(target, `${runId}-warmup-${index}`, card, waitSeconds))
  const outcomes: Record<string, number> = {}
  const measured = await fromGo(() =>
    pool(quotes, concurrency, async (index) => {
      count(
        outcomes,
        await GatewayHttp.quote(target, `${runId}-${index}`, card, waitSeconds).catch((error) => String(error))
      )
    })
  )
  print("RESULT", { ...measured, outcomes } satisfies LoadResult)
}

const health = async (settings: HealthSettings): Promise<void> => {
  const { concurrency, pairs, target, warmup } = settings
  let failures = 0
  const pair = async () => {
    for (let index = 0; index < 2; index++) {
      // the body read to its end, so that the connection is kept for the next request
      const ok = await GatewayHttp.healthz(target).then(
        async (response) => response.status === 200 && (await response.text()) !== "",
        () => false
      )
      if (!ok) failures++
    }
  }
  await pool(warmup, concurrency, pair)
  failures = 0
  const measured = await fromGo(() => pool(pairs, concurrency, pair))
  print("RESULT", { ...measured, failures } satisfies HealthResult)
}

const streams = async (settings: StreamsSettings): Promise<void> => {
  const { card, runId, target } = settings
  const failures: Record<string, number> = {}
  const ids: Array<string> = []
  await pool(settings.count, 32, async (index) => {
    const accepted = await GatewayHttp.post(target, `${runId}-${index}`, card)
    if (accepted.status !== 202) {
      await accepted.body?.cancel()
      return void count(failures, `POST ${accepted.status}`)
    }
    ids.push(((await accepted.json()) as { readonly id: string }).id)
  })
  print("SUBMITTED", { submitted: ids.length })
  await nextLine("OPEN")
  const abort = new AbortController()
  let events = 0
  let endedEarly = 0
  let closing = false
  const opened = await Promise.all(ids.map((id) =>
    new Promise<boolean>((resolve) => {
      GatewayHttp.events(target, id, undefined, abort.signal).then(async (response) => {
        if (response.status !== 200) {
          count(failures, `events ${response.status}`)
          await response.body?.cancel()
          return resolve(false)
        }
        await GatewayHttp.readEvents(response, () => {
          events++
          resolve(true)
        })
        if (!closing) endedEarly++
        resolve(false)
      }).catch((error: Error) => {
        if (!closing) count(failures, error.name)
        resolve(false)
      })
    })
  ))
  print("OPENED", { opened: opened.filter(Boolean).length })
  await nextLine("CLOSE")
  closing = true
  abort.abort()
  print(
    "RESULT",
    {
      submitted: ids.length,
      opened: opened.filter(Boolean).length,
      endedEarly,
      events,
      failures
    } satisfies StreamsResult
  )
}

const [mode, json] = process.argv.slice(2)
const main = mode === "load"
  ? load(JSON.parse(json!) as LoadSettings)
  : mode === "health"
  ? health(JSON.parse(json!) as HealthSettings)
  : mode === "streams"
  ? streams(JSON.parse(json!) as StreamsSettings)
  : Promise.reject(new Error(`usage: gateway-client.ts load|health|streams <json> (got ${mode})`))
main.then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
