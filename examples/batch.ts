/**
 * batch: quote several cards, three at a time, as one stream.
 *
 *   pnpm example batch
 *
 * `quoteAll` tags every event with the index of its card. One card's failure is data in the
 * stream (a Failed event, or Rejected when no transaction was created), never the end of the batch.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Errors, Money } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Console, Effect, Layer, Result, Stream } from "effect"

const GcxLive = QuotePoller.layer().pipe(
  Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(UndiciClient.layer)
)

const cards = [
  { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" },
  { cardNumber: "6006000000000019", pinNumber: "1234", productLineId: "2000" },
  { cardNumber: "6006000000000035", pinNumber: "1234", productLineId: "1000" }, // refused: invalid card
  { cardNumber: "6006000000000126", pinNumber: "1234", productLineId: "4000" },
  { cardNumber: "6006000000000134", pinNumber: "", productLineId: "1000" } // rejected before any I/O: empty PIN
]

/** The outcome of a card, from its terminal event; its progress events do not pass. */
const outcome = (item: QuotePoller.BatchEvent): Result.Result<string, QuotePoller.BatchEvent> => {
  if (item._tag === "Rejected") return Result.succeed(`rejected before any transaction: ${item.error.message}`)
  switch (item.event._tag) {
    case "Completed":
      return Result.succeed(`offered ${Money.format(item.event.quote.exchangeCardValue)}`)
    case "Failed":
      return Result.succeed(`${Errors.groupOf(item.event.error)} outcome: ${item.event.error._tag}`)
    default:
      return Result.fail(item)
  }
}

const program = Effect.gen(function*() {
  const poller = yield* QuotePoller.QuotePoller
  const finished = yield* poller.quoteAll(cards, { concurrency: 3 }).pipe(
    Stream.filterMap((item) => Result.map(outcome(item), (text) => `card ${item.index}: ${text}`)),
    Stream.tap(Console.log),
    Stream.runCount
  )
  yield* Console.log(`${finished} of ${cards.length} cards have an outcome`)
})

program.pipe(Effect.provide(GcxLive), NodeRuntime.runMain)
