/**
 * One cluster runner of the multi-runner proof, in a process of its own: `Runner.layerConfig`
 * (GCX_DATABASE_URL, GCX_RUNNER_ADDRESS) with the workflow under test, a poller and its local
 * `QuoteEvents` bus against the sandbox named by GCX_SANDBOX (JSON endpoint). Prints `READY` once
 * its layers are built, and one `EVENT <tag> <transactionId> <requestId?>` line per event of its
 * bus, for the proof's failover figures. Runs until SIGTERM (graceful) or SIGKILL.
 *
 * Usage: node --import tsx packages/workflow/test/cluster/runner-process.ts
 */
import { FetchHttpClient } from "@effect/platform"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Layer, Stream } from "effect"
import * as Runner from "../../src/Runner.js"
import * as ProbeWorkflow from "../utils/ProbeWorkflow.js"

const endpoint = JSON.parse(process.env.GCX_SANDBOX ?? "{}") as Sandbox.Service
const partner = JSON.parse(process.env.GCX_PARTNER ?? JSON.stringify(TestData.partner)) as TestData.Partner

const print = (line: string) => Effect.sync(() => process.stdout.write(line + "\n"))

/** Every event of the local bus, as one line. */
const eventLines = Layer.scopedDiscard(
  Effect.gen(function*() {
    const bus = yield* QuoteEvents.QuoteEvents
    const events = yield* bus.subscribe
    yield* Effect.forkScoped(Stream.runForEach(events, (event) =>
      print(
        `EVENT ${event._tag} ${event.transactionId} ${event._tag === "Submitted" ? event.requestId : "-"} ${Date.now()}`
      )))
  })
)

const services = QuotePoller.layer().pipe(
  Layer.provideMerge(Layer.merge(QuoteEvents.layer({ capacity: 100_000 }), QuoteJournal.layerNoop)),
  Layer.provideMerge(ExchangeClient.layerWith(Sandbox.clientOptions(endpoint, partner))),
  Layer.provide(FetchHttpClient.layer),
  Layer.orDie
)

const main = Layer.mergeAll(ProbeWorkflow.layer, eventLines, Layer.effectDiscard(print("READY"))).pipe(
  Layer.provide(services),
  Layer.provideMerge(Runner.layerConfig())
)

NodeRuntime.runMain(Layer.launch(main))
