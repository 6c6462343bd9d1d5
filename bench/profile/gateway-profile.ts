/**
 * A CPU profile of one side of row 9 alone, on the embedded deployment of row
 * 9 in this process (`internal/gatewayDeployment.ts`): the gateway side, with
 * the callers in their child process (`rows/gateway-client.ts`) and this
 * process's profile taken between their START and END only
 * (`node:inspector`), with `--wait` one POST a quote that waits for its
 * outcome (`Prefer: wait`), else the POST then its event stream; or, with
 * `--in-process`, `DurableQuotes.execute` called in this process at the same
 * concurrency. Prints this process's CPU ms per
 * quote; `diff.ts` compares the two profiles per quote.
 *
 * ```sh
 * node --import tsx bench/profile/gateway-profile.ts [quotes=1000] [out=bench/tmp/gateway.cpuprofile] [warmup=200] [--in-process | --wait]
 * node --import tsx bench/profile/summary.ts bench/tmp/gateway.cpuprofile --top 60
 * ```
 */
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgTest from "../../packages/workflow/test/utils/postgres.js"
import * as Child from "../internal/child.js"
import * as GatewayDeployment from "../internal/gatewayDeployment.js"
import { instantCard as card } from "../internal/gcx.js"
import { inBench } from "../internal/paths.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { profiled } from "./profiled.js"

const args = process.argv.slice(2).filter((arg) => !arg.startsWith("--"))
const inProcess = process.argv.includes("--in-process")
// the gateway side's POSTs wait for their outcome (`Prefer: wait`), as row 9's goal line
const waiting = process.argv.includes("--wait")
const quotes = Number(args[0] ?? 1000)
const out = args[1] ?? path.join("bench", "tmp", inProcess ? "in-process.cpuprofile" : "gateway.cpuprofile")
// a side's CPU per quote keeps falling over its first several thousand quotes: profile it warm
const warmup = Number(args[2] ?? 200)
const concurrency = 32

/** Profiles `run` (`profiled.ts`) and prints this process's CPU ms per quote. */
const profileSide = async (run: () => Promise<{ readonly wallMillis: number }>) => {
  const { cpuMillis, result } = await profiled(out, run)
  console.log(JSON.stringify({
    side: inProcess ? "in-process" : waiting ? "gateway, POST that waits" : "gateway",
    quotes,
    quotesPerSecond: Math.round((quotes * 1000) / result.wallMillis),
    cpuMillisPerQuote: Math.round((cpuMillis / quotes) * 1000) / 1000,
    profile: out
  }))
}

const program = Effect.gen(function*() {
  const sandbox = yield* SandboxProcess.scoped([{ timeScale: 20 }])
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "gcx-profile-gateway-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const port = yield* PgTest.freePort
  const layer = GatewayDeployment.layer({
    endpoint: sandbox.endpoint,
    filename: path.join(dir, "profile.db"),
    port,
    dataKey: CardCipher.generateKey()
  })
  yield* Effect.gen(function*() {
    if (inProcess) {
      const durable = yield* DurableQuotes.DurableQuotes
      const run = (count: number) =>
        Effect.forEach(Array.from({ length: count }), () => Effect.result(durable.execute(card)), {
          concurrency,
          discard: true
        })
      yield* run(warmup)
      const services = yield* Effect.context<DurableQuotes.DurableQuotes>()
      return yield* Effect.promise(() =>
        profileSide(async () => {
          const started = performance.now()
          await Effect.runPromise(Effect.provide(run(quotes), services))
          return { wallMillis: performance.now() - started }
        })
      )
    }
    const caller = yield* GatewayDeployment.createCaller("profile")
    const target = { baseUrl: GatewayDeployment.baseUrl(port), key: caller.key }
    const settings = {
      target,
      card,
      runId: "profile",
      warmup,
      quotes,
      concurrency,
      ...(waiting ? { waitSeconds: 30 } : {})
    }
    yield* Effect.promise(async () => {
      const child = Child.interactive("gateway client", inBench("rows", "gateway-client.ts"), [
        "load",
        JSON.stringify(settings)
      ])
      await child.expect("READY")
      await profileSide(async () => {
        child.send("GO")
        await child.expect("END")
        return JSON.parse(await child.expect("RESULT")) as { wallMillis: number }
      })
      await child.stop()
    })
  }).pipe(Effect.provide(layer))
}).pipe(Effect.scoped)

Effect.runPromise(program).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
