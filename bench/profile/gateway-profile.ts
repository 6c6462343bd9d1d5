/**
 * A CPU profile of row 9's gateway side alone: the embedded deployment of
 * row 9 in this process (`internal/gatewayDeployment.ts`), the callers in
 * their child process (`rows/gateway-client.ts`), this process's profile
 * taken between their START and END only (`node:inspector`), then summarised
 * by `summary.ts`. Also prints this process's CPU ms per quote.
 *
 * ```sh
 * node --import tsx bench/profile/gateway-profile.ts [quotes=1000] [out=bench/tmp/gateway.cpuprofile]
 * node --import tsx bench/profile/summary.ts bench/tmp/gateway.cpuprofile --top 60
 * ```
 */
import { TestData } from "@gcx/sandbox"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Inspector from "node:inspector/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as PgTest from "../../packages/workflow/test/utils/postgres.js"
import * as Child from "../internal/child.js"
import * as Cpu from "../internal/cpu.js"
import * as GatewayDeployment from "../internal/gatewayDeployment.js"
import { inBench } from "../internal/paths.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"

const quotes = Number(process.argv[2] ?? 1000)
const out = process.argv[3] ?? path.join("bench", "tmp", "gateway.cpuprofile")
const card = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
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
    const caller = yield* GatewayDeployment.createCaller("profile")
    const target = { baseUrl: GatewayDeployment.baseUrl(port), key: caller.key }
    const settings = { target, card, runId: "profile", warmup: 200, quotes, concurrency: 32 }
    yield* Effect.promise(async () => {
      const child = Child.interactive("gateway client", inBench("rows", "gateway-client.ts"), [
        "load",
        JSON.stringify(settings)
      ])
      const session = new Inspector.Session()
      session.connect()
      await session.post("Profiler.enable")
      await child.expect("START")
      await session.post("Profiler.start")
      const before = Cpu.selfMillis()
      await child.expect("END")
      const cpu = Cpu.selfMillis() - before
      const { profile } = await session.post("Profiler.stop")
      const result = JSON.parse(await child.expect("RESULT")) as { wallMillis: number }
      await child.stop()
      fs.mkdirSync(path.dirname(out), { recursive: true })
      fs.writeFileSync(out, JSON.stringify(profile))
      console.log(JSON.stringify({
        quotes,
        quotesPerSecond: Math.round((quotes * 1000) / result.wallMillis),
        cpuMillisPerQuote: Math.round((cpu / quotes) * 1000) / 1000,
        profile: out
      }))
    })
  }).pipe(Effect.provide(layer))
}).pipe(Effect.scoped)

Effect.runPromise(program).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
