/**
 * A client-only node (`GCX_DATABASE_URL`) hears a runner's events relayed in
 * batches (`EventRelay`, one per 50 ms) while the outcome comes at once: the
 * durable poller waits `relayGrace` after the outcome, so a quote whose last
 * progress was relayed after its outcome still shows it. `TestClock`, with
 * the bus real and the durable quotes a stand-in (the runner is elsewhere).
 */
import { describe, expect, it } from "@effect/vitest"
import { Quote, QuoteEvent } from "@gcx/core"
import { QuoteEvents, QuotePoller } from "@gcx/poller"
import { DurableQuotes } from "@gcx/workflow"
import { BigDecimal, DateTime, Effect, Fiber, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as DurablePoller from "../src/DurablePoller.js"

const requestId = "relayed-1"
const transactionId = "1JXX657P9VCKN74WVFNBH75GWR"
const input = { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" }

/** Collects the events `quote` shows when the runner's progress is relayed 100 ms after the outcome. */
const shown = (relayed: boolean) =>
  Effect.gen(function*() {
    const bus = yield* QuoteEvents.QuoteEvents
    const timestamp = yield* DateTime.now
    const quotes = Layer.mock(DurableQuotes.DurableQuotes, {
      submit: () =>
        Effect.gen(function*() {
          yield* bus.publish(new QuoteEvent.Submitted({ transactionId, timestamp, requestId }))
          // the runner's next batch: the last progress, relayed after the outcome was announced
          yield* Effect.forkDetach(
            Effect.sleep("100 millis").pipe(Effect.andThen(bus.publish(
              new QuoteEvent.Progress({ transactionId, timestamp, percentComplete: 100, steps: [] })
            )))
          )
          return requestId
        }),
      result: () =>
        Effect.succeed(
          new Quote.CompletedQuote({
            transactionId,
            actualCardValue: BigDecimal.fromNumberUnsafe(100),
            exchangeCardValue: BigDecimal.fromNumberUnsafe(85)
          })
        )
    })
    const poller = yield* DurablePoller.durablePoller({ relayed }).pipe(
      Effect.provide(Layer.merge(quotes, Layer.mock(QuotePoller.QuotePoller, {})))
    )
    const fiber = yield* Effect.forkChild(Stream.runCollect(poller.quote(input)))
    yield* TestClock.adjust("1 second")
    return (yield* Fiber.join(fiber)).map((event) => event._tag)
  }).pipe(Effect.provide(QuoteEvents.layer()))

describe("durable poller, client-only", () => {
  it.effect("the progress relayed after the outcome is shown before it", () =>
    Effect.gen(function*() {
      expect(yield* shown(true)).toEqual(["Submitted", "Progress", "Completed"])
    }))

  it.effect("without the grace (an embedded node, whose bus is its own) the outcome ends the progress at once", () =>
    Effect.gen(function*() {
      expect(yield* shown(false)).toEqual(["Submitted", "Completed"])
    }))
})
