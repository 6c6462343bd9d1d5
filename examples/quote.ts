/**
 * quote: submit one card and wait for its quote with `getQuote`.
 *
 *   pnpm example quote
 *
 * `getQuote` validates the card before any I/O, POSTs it, polls the transaction on a schedule
 * (the service's hint, then backoff) and returns the completed quote, or fails with a typed error.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Money } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Console, Effect, Layer } from "effect"

// The poller over a client configured by the GCX_* variables; Node's undici client does the HTTP.
const GcxLive = QuotePoller.layer().pipe(
  Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(UndiciClient.layer)
)

const program = Effect.gen(function*() {
  const poller = yield* QuotePoller.QuotePoller
  const quote = yield* poller.getQuote({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" })
  yield* Console.log(
    `balance ${Money.format(quote.actualCardValue)}, offered ${Money.format(quote.exchangeCardValue)}`
  )
})

program.pipe(Effect.provide(GcxLive), NodeRuntime.runMain)
