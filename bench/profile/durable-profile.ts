/**
 * A CPU profile of durable quotes embedded on SQLite (row 6's side), for
 * `bench/profile/summary.ts`: a warm-up of 6,000 quotes (each side's CPU per
 * quote falls over its first several thousand), then `count` quotes at concurrency 32,
 * with the profiler on for the measured quotes only. With `--floor`, the
 * engine's floor instead (row 6's baseline: a no-op workflow of one no-op
 * activity, `packages/workflow/test/utils/engine-floor.ts`), for
 * `bench/profile/diff.ts`.
 *
 * ```sh
 * pnpm build
 * node --import tsx bench/profile/durable-profile.ts [count] [--floor]   # writes bench/tmp/durable.cpuprofile (floor.cpuprofile)
 * ```
 */
import { TestData } from "@gcx/sandbox"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as EngineFloor from "../../packages/workflow/test/utils/engine-floor.js"
import { runnerDependencies } from "../internal/durableSides.js"
import { inBench } from "../internal/paths.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { profiled } from "./profiled.js"

const card = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}

const floor = process.argv.includes("--floor")

/** Runs `n` quotes of the profiled side at concurrency 32. */
class Quotes extends Context.Service<Quotes, (n: number) => Effect.Effect<void>>()("bench/profile/Quotes") {}

const main = async () => {
  const count = Number(process.argv.slice(2).find((arg) => !arg.startsWith("--")) ?? "300")
  const sandbox = await SandboxProcess.start([{ timeScale: 1 }])
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-durable-profile-"))
  let floorIds = 0
  const each = (n: number, call: () => Effect.Effect<unknown, unknown>) =>
    Effect.forEach(Array.from({ length: n }), () => Effect.ignore(call()), { concurrency: 32, discard: true })
  // the row's two layers: gcx's deployment, or the engine alone with the floor's workflow
  const deployment = (filename: string): Layer.Layer<Quotes> =>
    floor
      ? Layer.effect(
        Quotes,
        Effect.map(Effect.context<WorkflowEngine.WorkflowEngine>(), (engine) => (n: number) =>
          each(n, () =>
            Effect.provideContext(EngineFloor.execute(`floor-${floorIds++}`), engine)))
      ).pipe(Layer.provide(EngineFloor.layer.pipe(Layer.provideMerge(Embedded.layer({ filename })))), Layer.orDie)
      : Layer.effect(
        Quotes,
        Effect.map(DurableQuotes.DurableQuotes, (durable) => (n: number) =>
          each(n, () => durable.execute(card)))
      ).pipe(
        Layer.provide(Embedded.layerQuotes({ filename }).pipe(Layer.provide(runnerDependencies(sandbox.endpoint)))),
        Layer.orDie
      )
  const quotes = (n: number) => Effect.flatMap(Quotes, (run) => run(n))
  try {
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* quotes(6_000)
        const context = yield* Effect.context<Quotes>()
        const out = inBench("tmp", floor ? "floor.cpuprofile" : "durable.cpuprofile")
        const { cpuMillis } = yield* Effect.promise(() =>
          profiled(out, () => Effect.runPromise(Effect.provideContext(quotes(count), context)))
        )
        console.log(`${(cpuMillis / count).toFixed(2)} ms CPU per quote (profiler on)`)
      }).pipe(
        Effect.provide(deployment(path.join(dir, "gcx.db"))),
        Effect.scoped
      )
    )
  } finally {
    await sandbox.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

void main()
