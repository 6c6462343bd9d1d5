// The same program from CommonJS: gcx is ESM only, and Node >= 20.19 loads it through require(esm).
const { NodeHttpClient } = require("@effect/platform-node")
const { ExchangeClient } = require("@gcx/http")
const { QuoteEvents, QuoteJournal, QuotePoller } = require("@gcx/poller")
const { Sandbox, TestData } = require("@gcx/sandbox")
const { BigDecimal, Effect, Layer } = require("effect")

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

Effect.runPromise(Effect.scoped(program)).then(
  (completed) => console.log(JSON.stringify(completed)),
  (error) => {
    console.error(error)
    process.exitCode = 1
  }
)
