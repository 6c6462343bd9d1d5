/**
 * resume: a quote outlives the process that submitted it.
 *
 *   pnpm example resume
 *
 * The journal records every transaction in flight. Here a first "process" submits a quote and
 * stops right after the POST (as a crash would); a second one, built from scratch over the same
 * journal directory, resumes every unfinished transaction with `resumeAll` and sees it complete.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Console, Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A poller whose journal lives in files under `directory`. Each call builds a fresh one, as a new process would. */
const gcxLive = (directory: string) =>
  QuotePoller.layer().pipe(
    Layer.provideMerge(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerFileSystem(directory))),
    Layer.provide(ExchangeClient.layerConfig()),
    Layer.provide(UndiciClient.layer)
  )

const card = { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" }

// The first process: take only the Submitted event, then stop polling.
const submitThenStop = Effect.gen(function*() {
  const poller = yield* QuotePoller.QuotePoller
  const journal = yield* QuoteJournal.QuoteJournal
  yield* poller.quote(card).pipe(
    Stream.take(1),
    Stream.runForEach((event) => Console.log(`first process: ${event._tag} ${event.transactionId}, then it stops`))
  )
  const inFlight = yield* journal.entries
  yield* Console.log(`the journal holds ${inFlight.length} transaction(s) in flight: ${inFlight.map((e) => e.card)}`)
})

// The second process: resume whatever the journal holds, to the end.
const resume = Effect.gen(function*() {
  const poller = yield* QuotePoller.QuotePoller
  const journal = yield* QuoteJournal.QuoteJournal
  yield* poller.resumeAll().pipe(
    Stream.runForEach((event) => Console.log(`second process: ${event._tag} ${event.transactionId}`))
  )
  yield* Console.log(`the journal now holds ${(yield* journal.entries).length} transaction(s)`)
})

const program = Effect.acquireUseRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "gcx-journal-"))),
  (directory) =>
    submitThenStop.pipe(
      Effect.provide(gcxLive(directory)),
      Effect.andThen(resume.pipe(Effect.provide(gcxLive(directory))))
    ),
  (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
)

program.pipe(NodeRuntime.runMain)
