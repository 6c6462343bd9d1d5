import { assert, describe, expect, layer } from "@effect/vitest"
import { Errors, QuoteEvent } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import { Capture, Sandbox, TestData } from "@gcx/sandbox"
import { BigDecimal, Cause, Effect, Fiber, Option, Stream } from "effect"
import { PollSchedule, QuoteEvents, QuoteJournal, QuotePoller } from "../src/index.js"
import { card, sandbox, withPoller } from "./fixtures.js"

const { Cards } = TestData

const quoteEvents = (input: ReturnType<typeof card>, options?: QuotePoller.QuoteOptions) =>
  Effect.flatMap(QuotePoller.QuotePoller, (poller) => Stream.runCollect(poller.quote(input, options)))

const tags = (events: ReadonlyArray<QuoteEvent.QuoteEvent>) => events.map((event) => event._tag)
const terminal = (events: ReadonlyArray<QuoteEvent.QuoteEvent>) => events.filter(QuoteEvent.isTerminal)
const failure = (events: ReadonlyArray<QuoteEvent.QuoteEvent>) => {
  const last = events.at(-1)
  return last?._tag === "Failed" ? last.error : undefined
}
const getsOf = (transactionId: string) =>
  Effect.flatMap(Sandbox.SandboxServer, (server) => server.journal).pipe(
    Effect.map((journal) => journal.getsByTransactionId[transactionId] ?? 0)
  )

describe("QuotePoller over real HTTP", () => {
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("scenario cards", (it) => {
    it.effect("the 2 s card: Submitted, progress, both steps, one Completed with exact values", () =>
      Effect.gen(function*() {
        const events = yield* quoteEvents(card(Cards.success))
        expect(events[0]?._tag).toBe("Submitted")
        expect(terminal(events).length).toBe(1)
        const last = events.at(-1)!
        expect(last._tag).toBe("Completed")
        if (last._tag !== "Completed") return
        expect(BigDecimal.format(last.quote.actualCardValue)).toBe("100")
        expect(BigDecimal.format(last.quote.exchangeCardValue)).toBe("85")
        const steps = events.filter((e) => e._tag === "StepCompleted").map((e) => e.descriptionTag)
        expect(steps).toEqual(["exchange.vault.credit.card", "exchange.svc.fraud.check"])
        expect(events.every((e) => e.transactionId === last.transactionId)).toBe(true)
      }).pipe(withPoller()))

    it.effect("the instant card completes without a single GET", () =>
      Effect.gen(function*() {
        const events = yield* quoteEvents(card(Cards.instant))
        expect(tags(events)).toEqual(["Submitted", "Completed"])
        expect(yield* getsOf(events[0]!.transactionId)).toBe(0)
      }).pipe(withPoller()))

    it.effect("the default schedule spends few GETs on the 2 s card", () =>
      Effect.gen(function*() {
        const results = yield* Effect.forEach(
          Array.from({ length: 5 }),
          () => quoteEvents(card(Cards.success)),
          { concurrency: 5 }
        )
        const gets = yield* Effect.forEach(results, (events) => getsOf(events[0]!.transactionId))
        expect(results.every((events) => events.at(-1)?._tag === "Completed")).toBe(true)
        expect(gets.reduce((a, b) => a + b, 0) / gets.length).toBeLessThanOrEqual(1.5)
      }).pipe(withPoller()))

    const outcomes: ReadonlyArray<readonly [string, string, Errors.QuoteFailure["_tag"], string | undefined]> = [
      ["zero balance", Cards.zeroBalance, "CardValueOutOfRange", TestData.pin],
      ["invalid card", Cards.invalid, "InvalidCard", TestData.pin],
      ["not accepted", Cards.notAccepted, "CardNotAccepted", TestData.pin],
      ["merchant unavailable", Cards.merchantUnavailable, "MerchantUnavailable", TestData.pin],
      ["rejected PIN", Cards.success, "InvalidCard", TestData.rejectedPin]
    ]
    for (const [name, number, tag, pin] of outcomes) {
      it.effect(`${name}: one Failed event with the ${tag} and its user message`, () =>
        Effect.gen(function*() {
          const events = yield* quoteEvents(card(number, pin))
          expect(terminal(events).length).toBe(1)
          const error = failure(events)
          expect(error?._tag).toBe(tag)
          expect(error && Errors.customerMessage(error)).toEqual(Option.some(expect.any(String)))
          expect(events.some((e) => e._tag === "Completed")).toBe(false)
        }).pipe(withPoller()))
    }

    it.effect("getQuote gives the completed quote or fails with the typed error", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const quote = yield* poller.getQuote(card(Cards.instant))
        expect(BigDecimal.format(quote.actualCardValue)).toBe("50")
        const error = yield* Effect.flip(poller.getQuote(card(Cards.notAccepted)))
        expect(error._tag).toBe("CardNotAccepted")
        expect("userMessage" in error && error.userMessage).toContain("merchandise return credit")
      }).pipe(withPoller()))

    it.effect("bad card input fails before any I/O", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const before = (yield* server.journal).requests.createQuote
        const poller = yield* QuotePoller.QuotePoller
        const error = yield* Effect.flip(poller.getQuote({ ...card(Cards.success), pinNumber: "  " }))
        expect(error._tag).toBe("InvalidCardInput")
        expect((yield* server.journal).requests.createQuote).toBe(before)
      }).pipe(withPoller()))

    it.effect("bad polling options (deadline, schedule) are an InvalidRequest naming them, before any I/O", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const before = (yield* server.journal).requests
        const poller = yield* QuotePoller.QuotePoller
        // what a JavaScript caller, or a value read from configuration, may give
        const cases: ReadonlyArray<readonly [QuotePoller.QuoteOptions, string]> = [
          [{ deadline: "banana" as never }, "deadline must be a duration"],
          [{ deadline: "5 parsecs" as never }, "deadline must be a duration"],
          [{ deadline: -5 }, "deadline must not be negative"],
          [{ schedule: { maxDelay: "banana" as never } }, "schedule.maxDelay must be a duration"],
          [{ schedule: { factor: 0 } }, "schedule.factor must be a number above 0"],
          [{ schedule: { jitter: Number.NaN } }, "schedule.jitter must be a number"]
        ]
        for (const [options, message] of cases) {
          const error = yield* Effect.flip(poller.getQuote(card(Cards.instant), options))
          assert(error._tag === "InvalidRequest")
          expect(error.message).toContain(message)
          const streamed = yield* Effect.flip(Stream.runDrain(poller.quote(card(Cards.instant), options)))
          expect(streamed.message).toContain(message)
        }
        // a track with bad options: a defect naming them, no GET, and no Failed that would end the transaction
        const tracked = yield* Effect.exit(
          Stream.runCollect(poller.track("1JXX657P9VCKN74WVFNBH75GWR", { deadline: -1 }))
        )
        assert(tracked._tag === "Failure")
        expect(String(Cause.squash(tracked.cause))).toContain("QuotePoller: deadline must not be negative")
        const after = (yield* server.journal).requests
        // the jitter is clamped to 0..1, as it always was
        const clamped = yield* poller.getQuote(card(Cards.instant), { schedule: { jitter: 2 } })
        expect(BigDecimal.format(clamped.actualCardValue)).toBe("50")
        expect(after.createQuote).toBe(before.createQuote)
        expect(after.getTransaction).toBe(before.getTransaction)
      }).pipe(withPoller()))

    it.effect("a batch with mixed outcomes: every card ends once, failures are data", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const inputs = [
          card(Cards.success),
          card(Cards.instant),
          card(Cards.invalid),
          { ...card(Cards.success), cardNumber: "" },
          card(Cards.merchantUnavailable),
          card("6006000000001234")
        ]
        const events = yield* Stream.runCollect(poller.quoteAll(inputs, { concurrency: 3 }))
        const outcome = (index: number) => {
          const mine = events.filter((e) => e.index === index)
          const ends = mine.filter((e) => e._tag === "Rejected" || QuoteEvent.isTerminal(e.event))
          expect(ends.length).toBe(1)
          const end = ends[0]!
          return end._tag === "Rejected" ? `Rejected:${end.error._tag}` : end.event._tag === "Failed"
            ? `Failed:${end.event.error._tag}`
            : end.event._tag
        }
        expect(inputs.map((_, i) => outcome(i))).toEqual([
          "Completed",
          "Completed",
          "Failed:InvalidCard",
          "Rejected:InvalidCardInput",
          "Failed:MerchantUnavailable",
          "Completed"
        ])
      }).pipe(withPoller()))

    it.effect("trackAll follows many transactions in one stream: each ends once, with its own outcome", () =>
      Effect.gen(function*() {
        const client = yield* ExchangeClient.ExchangeClient
        const numbers = [Cards.success, Cards.zeroBalance, Cards.success, Cards.invalid, Cards.merchantUnavailable]
        const created = yield* Effect.forEach(numbers, (number) => client.createQuote(card(number)), {
          concurrency: "unbounded"
        })
        const poller = yield* QuotePoller.QuotePoller
        const events = yield* Stream.runCollect(
          poller.trackAll(created.map((quote) => ({
            transactionId: quote.transactionId,
            expectedCompletionTime: quote.quote.expectedCompletionTime
          })))
        )

        const outcomes = created.map((quote) => {
          const ends = terminal(events.filter((event) => event.transactionId === quote.transactionId))
          expect(ends.length).toBe(1)
          const end = ends[0]!
          return end._tag === "Failed" ? end.error._tag : end._tag
        })
        expect(outcomes).toEqual([
          "Completed",
          "CardValueOutOfRange",
          "Completed",
          "InvalidCard",
          "MerchantUnavailable"
        ])
        const gets = yield* Effect.forEach(created, (quote) => getsOf(quote.transactionId))
        expect(gets.every((count) => count >= 1)).toBe(true)
      }).pipe(withPoller()))

    it.effect("the GETs of a quote run with the caller's tracer, under the quote's span, under the caller's", () => {
      // The tracer is the caller's alone: the poller was built without it.
      const capture = Capture.make()
      return Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        yield* poller.quote(card(Cards.success)).pipe(
          Stream.runDrain,
          Effect.withSpan("caller"),
          Effect.provide(Capture.spans(capture))
        )
        const caller = capture.spans.find((span) => span.name === "caller")!
        const quote = capture.spans.find((span) => span.name === "QuotePoller.quote")!
        expect(Option.map(quote.parent, (parent) => parent.spanId)).toEqual(Option.some(caller.spanId))
        const gets = capture.spans.filter((span) => span.name === "ExchangeClient.getTransaction")
        expect(gets.length).toBeGreaterThanOrEqual(1)
        expect(gets.map((span) => Option.map(span.parent, (parent) => parent.spanId))).toEqual(
          gets.map(() => Option.some(quote.spanId))
        )
      }).pipe(withPoller())
    })

    it.effect("the bus sees every quote's events; a subscriber that never reads slows nothing", () =>
      Effect.gen(function*() {
        const bus = yield* QuoteEvents.QuoteEvents
        const all = yield* bus.subscribe
        const stalled = yield* bus.subscribe // never read: with capacity 4 it overflows at once
        const seen = yield* all.pipe(
          Stream.filter(QuoteEvent.isTerminal),
          Stream.take(2),
          Stream.runCollect,
          Effect.forkChild
        )
        const poller = yield* QuotePoller.QuotePoller
        const [a, b] = yield* Effect.all([poller.getQuote(card(Cards.success)), poller.getQuote(card(Cards.instant))], {
          concurrency: 2
        })
        const terminals = yield* Fiber.join(seen)
        expect(terminals.map((e) => e.transactionId).sort()).toEqual([a.transactionId, b.transactionId].sort())
        const backlog = yield* stalled.pipe(Stream.take(4), Stream.runCollect)
        expect(backlog.at(-1)?._tag).toMatch(/Completed/)
      }).pipe(Effect.scoped, withPoller({ bus: { capacity: 4 } })))

    it.effect("the journal holds a transaction in flight and forgets it at its outcome", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const journal = yield* QuoteJournal.QuoteJournal
        const inFlight = yield* poller.quote(card(Cards.success)).pipe(
          Stream.take(1),
          Stream.runCollect,
          Effect.andThen(journal.entries)
        )
        expect(inFlight.length).toBe(1)
        expect(inFlight[0]!.card).toBe("****0001")
        const resumed = yield* Stream.runCollect(poller.resumeAll())
        expect(resumed.at(-1)?._tag).toBe("Completed")
        expect(yield* journal.entries).toEqual([])
      }).pipe(withPoller()))
  })

  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("faults and interruption", (it) => {
    it.effect("503s and resets mid-poll become Retrying events and the quote still completes", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([
          { route: "getTransaction", kind: "status503", sequence: [true, false, true] },
          { route: "getTransaction", kind: "reset", sequence: [false, true] }
        ])
        const events = yield* quoteEvents(card(Cards.success))
        yield* server.setFaults([])
        expect(events.filter((e) => e._tag === "Retrying").length).toBeGreaterThanOrEqual(2)
        expect(events.at(-1)?._tag).toBe("Completed")
        expect(terminal(events).length).toBe(1)
      }).pipe(withPoller()))

    it.effect("interrupting the stream stops polling at once: no GET after interruption", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        // Poll every 50 ms so that GETs are under way when the consumer stops.
        const seen = yield* poller.quote(card(Cards.slow), { schedule: PollSchedule.fixed("50 millis") }).pipe(
          Stream.filter((event) => event._tag === "Progress"),
          Stream.take(2),
          Stream.runCollect
        )
        const transactionId = seen[0]!.transactionId
        const atInterruption = yield* getsOf(transactionId)
        expect(atInterruption).toBeGreaterThanOrEqual(2)
        yield* Effect.sleep("500 millis")
        expect(yield* getsOf(transactionId)).toBe(atInterruption)
      }).pipe(withPoller()))

    it.effect("interrupting getQuote stops its polling at once", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const bus = yield* QuoteEvents.QuoteEvents
        const progress = yield* bus.subscribe.pipe(
          Effect.map(Stream.filter((event) => event._tag === "Progress")),
          Effect.flatMap((stream) => Effect.forkChild(Stream.runHead(Stream.drop(stream, 1))))
        )
        const fiber = yield* Effect.forkChild(
          poller.getQuote(card(Cards.slow), { schedule: PollSchedule.fixed("50 millis") })
        )
        const second = yield* Fiber.join(progress)
        const transactionId = Option.getOrThrow(second).transactionId
        yield* Fiber.interrupt(fiber)
        const atInterruption = yield* getsOf(transactionId)
        expect(atInterruption).toBeGreaterThanOrEqual(2)
        yield* Effect.sleep("500 millis")
        expect(yield* getsOf(transactionId)).toBe(atInterruption)
      }).pipe(Effect.scoped, withPoller()))

    it.effect("the slow card completes", () =>
      Effect.gen(function*() {
        const events = yield* quoteEvents(card(Cards.slow))
        expect(events.at(-1)?._tag).toBe("Completed")
        expect(events.filter((e) => e._tag === "Progress").length).toBeGreaterThanOrEqual(1)
      }).pipe(withPoller()))
  })
})
