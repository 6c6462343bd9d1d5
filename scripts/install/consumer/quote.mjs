// A plain Node ES module, as a partner's application would write it: no TypeScript, no loader.
// Starts a sandbox in the process, quotes one card with getQuote and prints the completed values.
import { NodeHttpClient } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Sandbox, TestData } from "@gcx/sandbox"
import { BigDecimal, Effect, Layer } from "effect"

const program = Effect.gen(function*() {
  const server = yield* Sandbox.make({ logLevel: "None" })
  const gcx = QuotePoller.layer().pipe(
    Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
    Layer.provide(ExchangeClient.layerWith(Sandbox.clientOptions(server))),
    Layer.provide(NodeHttpClient.layerUndici)
  )
  const quote = yield* QuotePoller.QuotePoller.pipe(
    Effect.flatMap((poller) =>
      poller.getQuote({
        cardNumber: TestData.Cards.instant,
        pinNumber: "1234",
        productLineId: TestData.defaultProductLineId
      })
    ),
    Effect.provide(gcx)
  )
  return {
    _tag: "Completed",
    transactionId: quote.transactionId,
    actualCardValue: BigDecimal.format(quote.actualCardValue),
    exchangeCardValue: BigDecimal.format(quote.exchangeCardValue)
  }
})

const completed = await Effect.runPromise(Effect.scoped(program))
console.log(JSON.stringify(completed))
