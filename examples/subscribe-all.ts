/**
 * subscribe-all: every event of every quote, from the event bus, while two quotes run at once.
 *
 *   pnpm example subscribe-all
 *
 * QuoteEvents is a PubSub: a subscriber sees every event published after it subscribed, for as
 * long as its scope lasts. A slow subscriber never slows quoting (the oldest unread events are
 * dropped for it past the bus's capacity).
 */
import { NodeRuntime } from "@effect/platform-node"
import { QuoteEvent } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Console, Effect, Fiber, Layer, Stream } from "effect"

// provideMerge keeps QuoteEvents in the output, so that the program can subscribe to it.
const GcxLive = QuotePoller.layer().pipe(
  Layer.provideMerge(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(UndiciClient.layer)
)

const program = Effect.gen(function*() {
  const bus = yield* QuoteEvents.QuoteEvents
  const poller = yield* QuotePoller.QuotePoller
  // Subscribe before quoting: the subscription starts now and lasts as long as the scope.
  const events = yield* bus.subscribe
  const subscriber = yield* events.pipe(
    Stream.tap((event) => Console.log(`[${event.transactionId.slice(0, 8)}] ${event._tag}`)),
    Stream.filter(QuoteEvent.isTerminal),
    Stream.take(2), // both quotes have ended
    Stream.runDrain,
    Effect.forkChild
  )
  yield* Effect.all([
    poller.getQuote({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" }),
    poller.getQuote({ cardNumber: "6006000000000092", pinNumber: "1234", productLineId: "2000" })
  ], { concurrency: 2 })
  yield* Fiber.join(subscriber)
})

program.pipe(Effect.scoped, Effect.provide(GcxLive), NodeRuntime.runMain)
