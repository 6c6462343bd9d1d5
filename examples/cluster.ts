/**
 * cluster: durable quotes on a cluster runner over PostgreSQL, awaited from a client-only node.
 *
 *   GCX_DATABASE_URL=postgres://user@127.0.0.1:5432/gcx GCX_DATA_KEY=$(openssl rand -base64 32) pnpm example cluster
 *
 * In production the runner (`gcx runner`) and the client are separate processes, any number of
 * each; here both live in this process. The client submits three quotes, awaits them with
 * `result`, and follows every terminal outcome announced by the runners (`Outcomes`, over
 * PostgreSQL LISTEN/NOTIFY). Without GCX_DATABASE_URL it says so and exits.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { CardCipher, ClusterSecurity, DurableQuotes, Outcomes, Runner } from "@gcx/workflow"
import { Console, Context, Effect, Layer, Result, Stream } from "effect"
import { createServer } from "node:net"
import type { AddressInfo } from "node:net"

/** A free port on 127.0.0.1 for the runner. */
const freePort = Effect.callback<number>((resume) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

const cards = [
  { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" },
  { cardNumber: "6006000000000019", pinNumber: "1234", productLineId: "1000" },
  { cardNumber: "6006000000000035", pinNumber: "1234", productLineId: "1000" }
]

const program = Effect.gen(function*() {
  const databaseUrl = yield* Runner.databaseUrlConfig
  const port = yield* freePort
  // the runner: runs the quotes of its shards
  yield* Layer.build(
    DurableQuotes.layerRunner(
      Runner.layer({
        databaseUrl,
        runnerAddress: Result.getOrThrow(Runner.parseRunnerAddress(`127.0.0.1:${port}`)),
        // one machine: plain TCP on loopback; across machines, the cluster's TLS certificates (docs/security.md)
        security: ClusterSecurity.insecureLoopback
      })
    ).pipe(
      Layer.provide(CardCipher.layerConfig()),
      Layer.provide(ExchangeClient.layerConfig()),
      Layer.provide(UndiciClient.layer)
    )
  )
  // the client-only node: submits, awaits, and follows the outcomes of every runner
  const client = yield* Layer.build(
    DurableQuotes.layer().pipe(
      Layer.provideMerge(Runner.layerClient({ databaseUrl, security: ClusterSecurity.insecureLoopback })),
      Layer.provide(CardCipher.layerConfig())
    )
  )
  const quotes = Context.get(client, DurableQuotes.DurableQuotes)
  yield* Context.get(client, Outcomes.Outcomes).subscribe.pipe(
    Stream.runForEach((outcome) =>
      Console.log(`outcome announced: ${outcome._tag} ${outcome.requestId} transaction ${outcome.transactionId ?? "-"}`)
    ),
    Effect.forkScoped
  )
  const requestIds = yield* Effect.forEach(cards, (card) => quotes.submit(card))
  yield* Console.log(`submitted ${requestIds.length} quotes from the client-only node`)
  for (const requestId of requestIds) {
    const outcome = yield* Effect.result(quotes.result(requestId))
    yield* Console.log(
      Result.match(outcome, {
        onSuccess: (quote) => `${requestId}: completed, transaction ${quote.transactionId}`,
        onFailure: (error) => `${requestId}: ${error._tag}`
      })
    )
  }
  // let the last announcement arrive before stopping
  yield* Effect.sleep("500 millis")
})

const main = (process.env.GCX_DATABASE_URL ?? "").trim() === ""
  ? Console.log("cluster: GCX_DATABASE_URL is not set; start PostgreSQL and set it to run this example")
  : Effect.scoped(program)

NodeRuntime.runMain(main)
