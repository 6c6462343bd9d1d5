/**
 * progress-stream: the events of one quote, as they happen.
 *
 *   pnpm example progress-stream
 *
 * `quote` is a Stream of QuoteEvents: Submitted, then Progress and StepCompleted as the two steps
 * (exchange.vault.credit.card, exchange.svc.fraud.check) advance, Retrying when a transient failure
 * is retried, and exactly one terminal event, Completed or Failed. Every event encodes to JSON.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Money, QuoteEvent } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { PollSchedule, QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Console, Effect, Layer, Stream } from "effect"

const GcxLive = QuotePoller.layer().pipe(
  Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(UndiciClient.layer)
)

/** What a customer-facing screen could show for each event. */
const describe = (event: QuoteEvent.QuoteEvent): string => {
  switch (event._tag) {
    case "Submitted":
      return `submitted card ${event.card}: transaction ${event.transactionId}`
    case "Progress":
      return `${event.percentComplete}% (${
        event.steps.filter((step) => step.isCompleted).length
      }/${event.steps.length} steps done)`
    case "StepCompleted":
      return `step done: ${event.descriptionTag}`
    case "Retrying":
      return `retrying (${event.reason}), attempt ${event.attempt}`
    case "Completed":
      return `completed: worth ${Money.format(event.quote.exchangeCardValue)}`
    case "Failed":
      return `failed: ${event.error._tag}`
  }
}

const program = QuotePoller.QuotePoller.pipe(
  Effect.flatMap((poller) =>
    // Poll every 100 ms instead of waiting for the service's hint, so that every percent shows.
    poller.quote(
      { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" },
      { schedule: PollSchedule.fixed("100 millis") }
    ).pipe(
      Stream.tap((event) => Console.log(describe(event))),
      // The terminal event as it would go out on a JSON-lines feed.
      Stream.filter(QuoteEvent.isTerminal),
      Stream.runForEach((event) => Console.log(JSON.stringify(QuoteEvent.encode(event))))
    )
  )
)

program.pipe(Effect.provide(GcxLive), NodeRuntime.runMain)
