/**
 * A CPU profile of durable quotes embedded on SQLite (row 6's side), for
 * `bench/profile/summary.ts`: warm-up, then `count` quotes at concurrency 32,
 * with the profiler on for the measured quotes only.
 *
 * ```sh
 * pnpm build
 * node --import tsx bench/profile/durable-profile.ts [count]   # writes bench/tmp/durable.cpuprofile
 * ```
 */
import { TestData } from "@gcx/sandbox"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as inspector from "node:inspector/promises"
import * as os from "node:os"
import * as path from "node:path"
import { runnerDependencies } from "../internal/durableSides.js"
import { inBench } from "../internal/paths.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"

const card = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}

const main = async () => {
  const count = Number(process.argv[2] ?? "300")
  const sandbox = await SandboxProcess.start([{ timeScale: 1 }])
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-durable-profile-"))
  const session = new inspector.Session()
  session.connect()
  const quotes = (n: number) =>
    Effect.flatMap(
      DurableQuotes.DurableQuotes,
      (durable) =>
        Effect.forEach(Array.from({ length: n }), () => Effect.ignore(durable.execute(card)), {
          concurrency: 32,
          discard: true
        })
    )
  try {
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* quotes(200)
        yield* Effect.promise(() => session.post("Profiler.enable"))
        yield* Effect.promise(() => session.post("Profiler.start"))
        const cpu = process.cpuUsage()
        yield* quotes(count)
        const used = process.cpuUsage(cpu)
        const { profile } = yield* Effect.promise(() => session.post("Profiler.stop"))
        fs.mkdirSync(inBench("tmp"), { recursive: true })
        fs.writeFileSync(inBench("tmp", "durable.cpuprofile"), JSON.stringify(profile))
        console.log(`${((used.user + used.system) / 1000 / count).toFixed(2)} ms CPU per quote (profiler on)`)
      }).pipe(
        Effect.provide(
          Embedded.layerQuotes({ filename: path.join(dir, "gcx.db") }).pipe(
            Layer.provide(runnerDependencies(sandbox.endpoint)),
            Layer.orDie
          )
        ),
        Effect.scoped
      )
    )
  } finally {
    session.disconnect()
    await sandbox.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

void main()
