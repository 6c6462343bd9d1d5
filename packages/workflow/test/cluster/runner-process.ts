/**
 * One cluster runner of the multi-runner proof, in a process of its own: `DurableQuotes.layerRunner`
 * over `Runner.layerConfig` (GCX_DATABASE_URL, GCX_RUNNER_ADDRESS), the data key of GCX_DATA_KEY, a
 * client of the sandbox named by GCX_SANDBOX (JSON endpoint) as the partner of GCX_PARTNER. Prints
 * `READY` once its layers are built, and one `EVENT <tag> <transactionId> <requestId|-> <epoch ms>`
 * line per event of its local bus, for the proof's failover figures, and `REFUSED <n>` whenever the
 * count of refused cluster connections (`gcx.cluster.connections.refused`, all reasons) changes. Runs
 * until SIGTERM (graceful) or SIGKILL. The cluster's security comes from the environment
 * (`GCX_RUNNER_TLS_*`, or `GCX_RUNNER_INSECURE_LOOPBACK=true`).
 *
 * Usage: node --import tsx packages/workflow/test/cluster/runner-process.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents } from "@gcx/poller"
import type { TestData } from "@gcx/sandbox"
import { Sandbox } from "@gcx/sandbox"
import { Effect, Layer, Metric, Schedule, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { CardCipher, ClusterSecurity, DurableQuotes } from "../../src/index.js"
import * as Runner from "../../src/Runner.js"

const endpoint = JSON.parse(process.env.GCX_SANDBOX ?? "{}") as Sandbox.Service
const partner = JSON.parse(process.env.GCX_PARTNER ?? "{}") as TestData.Partner

const print = (line: string) => Effect.sync(() => process.stdout.write(line + "\n"))

/** Every event of the local bus, as one line. */
const eventLines = Layer.effectDiscard(
  Effect.gen(function*() {
    const events = yield* (yield* QuoteEvents.QuoteEvents).subscribe
    yield* Effect.forkScoped(Stream.runForEach(events, (event) =>
      print(
        `EVENT ${event._tag} ${event.transactionId} ${event._tag === "Submitted" ? event.requestId : "-"} ${Date.now()}`
      )))
  })
)

/** `REFUSED <n>` whenever the count of refused connections changes. */
const refusedLines = Layer.effectDiscard(Effect.gen(function*() {
  const reasons = ["handshake", "frame_too_large", "malformed_frame", "stalled_frame"] as const
  let last = 0
  const total = Effect.map(
    Effect.forEach(reasons, (reason) => Metric.value(ClusterSecurity.connectionsRefusedFamily({ reason }))),
    (states) => states.reduce((sum, state) => sum + state.count, 0)
  )
  yield* Effect.forkScoped(Effect.repeat(
    Effect.flatMap(
      total,
      (n) => n === last ? Effect.void : Effect.andThen(Effect.sync(() => last = n), print(`REFUSED ${n}`))
    ),
    Schedule.spaced("100 millis")
  ))
}))

const runner = DurableQuotes.layerRunner(Runner.layerConfig(), { bus: { capacity: 100_000 } }).pipe(
  Layer.provide(CardCipher.layerConfig()),
  // A runner carries hundreds of quotes at once: the client-wide retry budget is sized to that load (the
  // default, 20 retries refilled at 1 per second, fits one client process; with 5 % of answers 503 at
  // about 40 requests/s a runner needs 2 retries/s, and quotes would fail ServiceUnavailable once it ran out).
  Layer.provide(ExchangeClient.layerWith({
    ...Sandbox.clientOptions(endpoint, partner),
    retry: { budget: { capacity: 1_000, refillPerSecond: 100 } }
  })),
  Layer.provide(FetchHttpClient.layer)
)

NodeRuntime.runMain(Layer.launch(
  Layer.mergeAll(eventLines, refusedLines, Layer.effectDiscard(print("READY"))).pipe(
    Layer.provideMerge(runner)
  )
))
