import { NodeHttpClient } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Duration, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import { CardCipher, DurableQuotes, Embedded } from "./src/index.js"

const n = Number(process.argv[2] ?? 200)
const conc = Number(process.argv[3] ?? 20)
const card = { cardNumber: TestData.Cards.instant, pinNumber: "1234", productLineId: "1000" }

const phase = <E, R>(name: string, run: () => Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    const cpu0 = process.cpuUsage()
    const [t, results] = yield* Effect.timed(
      Effect.forEach(Array.from({ length: n }), () => Effect.either(run()), { concurrency: conc })
    )
    const cpu = process.cpuUsage(cpu0)
    const ms = Duration.toMillis(t)
    const failed = results.filter((r) => r._tag === "Left").length
    console.log(
      `${name}: ${n} quotes (${failed} failed) in ${ms.toFixed(0)} ms: ${(n / ms * 1000).toFixed(1)} quotes/s, CPU ${
        ((cpu.user + cpu.system) / 1000 / n).toFixed(2)
      } ms/quote (sandbox included)`
    )
  })

const main = Effect.gen(function*() {
  const server = yield* Sandbox.make({ logLevel: "None", timeScale: 0.01 })
  const client = ExchangeClient.layerWith({ ...Sandbox.clientOptions(server), requestTimeout: "30 seconds" }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )
  const file = `/tmp/gcx-measure-${process.pid}.db`
  const durable = Embedded.layerQuotes({
    filename: file,
    sharding: process.env.NOSIM ? { simulateRemoteSerialization: false } : {}
  }).pipe(Layer.provide(CardCipher.layer(CardCipher.generateKey())), Layer.provide(client))
  const poller = QuotePoller.layer().pipe(
    Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
    Layer.provide(client)
  )
  if (!process.env.SKIP) {
    yield* Effect.flatMap(QuotePoller.QuotePoller, (p) =>
      Effect.zipRight(
        phase("warmup getQuote", () => p.getQuote(card)),
        phase("getQuote (in-process)", () => p.getQuote(card))
      )).pipe(Effect.provide(poller))
  }
  yield* Effect.flatMap(
    DurableQuotes.DurableQuotes,
    (q) =>
      Effect.zipRight(
        phase("warmup execute", () => q.execute(card)),
        phase("execute (embedded SQLite)", () => q.execute(card))
      )
  ).pipe(Effect.provide(durable))
  for (const suffix of ["", "-wal", "-shm"]) Fs.rmSync(file + suffix, { force: true })
}).pipe(Effect.scoped)
Effect.runPromise(main).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
