/**
 * The poller's timing, under TestClock. The exchange client is scripted here
 * because TestClock cannot drive a real server's clock: exact poll times and
 * deadlines can only be asserted against a client whose answers follow the
 * test clock. Everything else about the poller is tested over real HTTP
 * against the sandbox (QuotePoller.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Errors, QuoteEvent, Transaction } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import { Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Ref, Schema, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { PollSchedule, QuoteEvents, QuoteJournal, QuotePoller } from "../src/index.js"
import * as Idle from "./idle.js"

type Answer = Transaction.TransactionStatus | Errors.ServiceError | Errors.TokenError | "hang"

const status = (percentComplete: number, isCompleted = false, expectedCompletionTime?: number) =>
  Schema.decodeUnknownSync(Transaction.TransactionStatus)({
    percentComplete,
    response: {
      transactionId: "TX",
      isCompleted,
      percentComplete,
      ...(isCompleted ? { actualCardValue: 100, exchangeCardValue: 85 } : {}),
      ...(expectedCompletionTime !== undefined ? { expectedCompletionTime } : {})
    }
  })

const unavailable = new Errors.ServiceUnavailable({ message: "HTTP 503", httpStatus: 503 })

/** One GET the scripted client received: the transaction and the (test) clock time. */
interface Call {
  readonly transactionId: string
  readonly at: number
}

/**
 * A client whose GETs answer from a script per transaction (the n-th GET of a
 * transaction gets the n-th answer, the last one repeating) and record each call.
 */
const scripted = (scriptOf: (transactionId: string) => ReadonlyArray<Answer>, calls: Ref.Ref<Array<Call>>) =>
  Layer.succeed(
    ExchangeClient.ExchangeClient,
    ExchangeClient.ExchangeClient.of({
      heartbeat: Effect.die("not scripted"),
      createQuote: () => Effect.die("not scripted"),
      getTransaction: (transactionId) =>
        Effect.gen(function*() {
          const at = yield* Clock.currentTimeMillis
          const made = yield* Ref.getAndUpdate(calls, (all) => [...all, { transactionId, at }])
          const script = scriptOf(transactionId)
          const answer = script[
            Math.min(made.filter((call) => call.transactionId === transactionId).length, script.length - 1)
          ]!
          if (answer === "hang") return yield* Effect.never
          if (Schema.is(Transaction.TransactionStatus)(answer)) {
            return {
              status: answer,
              traceId: Option.none(),
              requestId: "r",
              attempts: 1,
              retryDelay: Duration.zero
            }
          }
          return yield* Effect.fail(answer)
        })
    })
  )

/** The poller over a scripted client. */
const pollerOver = (
  scriptOf: (transactionId: string) => ReadonlyArray<Answer>,
  calls: Ref.Ref<Array<Call>>,
  options?: QuotePoller.Options
) =>
  QuotePoller.layer(options).pipe(
    Layer.provide(Layer.mergeAll(scripted(scriptOf, calls), QuoteEvents.layer(), QuoteJournal.layerMemory))
  )

const run = (
  script: ReadonlyArray<Answer>,
  options: QuotePoller.TrackOptions,
  advance: Duration.Input = "10 minutes"
) =>
  Effect.gen(function*() {
    const calls = yield* Ref.make<Array<Call>>([])
    const idle = yield* Idle.make
    const fiber = yield* Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
      Stream.runCollect(poller.track("TX", options))).pipe(
        Effect.provide(pollerOver(() =>
          script, calls)),
        Effect.forkChild,
        idle.track
      )
    yield* settleAndAdjust(idle, advance)
    const events = yield* Fiber.join(fiber)
    return { events, calls: (yield* Ref.get(calls)).map((call) => call.at) }
  })

const noJitter = { jitter: 0 } as const

/**
 * Lets what `idle` tracks run until every fiber of it waits, then adjusts the
 * clock. Effect 4's `TestClock.adjust` waits one scheduler turn for fibers
 * that no sleep woke (Effect 3's waited until every fiber was suspended): the
 * poller's first steps (its layer, engine, first GET) take several turns, and
 * would otherwise see the clock already moved (`Idle`).
 */
const settleAndAdjust = (idle: Idle.Idle, duration: Duration.Input) =>
  idle.settled.pipe(Effect.andThen(TestClock.adjust(duration)))

/**
 * A poller with one GET slot, taken from 0 ms by HANGS, whose GET never
 * answers until its deadline; `other` (which completes on its first GET) is
 * tracked beside it.
 */
const besideAHangingGet = (
  hangsDeadline: Duration.Input,
  other: QuotePoller.TrackOptions & { readonly transactionId: string }
) =>
  Effect.gen(function*() {
    const calls = yield* Ref.make<Array<Call>>([])
    const layer = pollerOver((id) => id === "HANGS" ? ["hang"] : [status(100, true)], calls, {
      maxConcurrentPolls: 1,
      schedule: noJitter
    })
    const idle = yield* Idle.make
    const fiber = yield* Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
      Effect.all([
        Stream.runCollect(poller.track("HANGS", { deadline: hangsDeadline })),
        Stream.runCollect(poller.track(other.transactionId, other))
      ], { concurrency: "unbounded" })).pipe(Effect.provide(layer), Effect.forkChild, idle.track)
    yield* settleAndAdjust(idle, "2 minutes")
    const [hangs, others] = yield* Fiber.join(fiber)
    return {
      calls: yield* Ref.get(calls),
      hangs,
      other: others
    }
  })

describe("QuotePoller timing (TestClock)", () => {
  it.effect("polls at the hint, then on the backoff, and stops at completion", () =>
    Effect.gen(function*() {
      const { calls, events } = yield* run(
        [status(40), status(80), status(100, true)],
        { schedule: noJitter, expectedCompletionTime: 2 }
      )
      expect(calls).toEqual([2000, 2250, 2750])
      expect(events.map((e) => e._tag)).toEqual(["Progress", "Progress", "Progress", "Completed"])
    }))

  it.effect("ends in PollTimeout at the deadline, keeping the transaction id", () =>
    Effect.gen(function*() {
      const { calls, events } = yield* run([status(10)], { schedule: noJitter, deadline: "10 seconds" })
      // 0, then 250, 500, 1000, 2000, 4000 ms of backoff; the next (5 s) would pass the deadline:
      // the quote ends at the deadline, without a GET that would have no time to be answered.
      expect(calls).toEqual([0, 250, 750, 1750, 3750, 7750])
      expect(events.at(-1)?.timestamp.epochMilliseconds).toBe(10_000)
      const last = events.at(-1)!
      expect(last._tag).toBe("Failed")
      const error = last._tag === "Failed" ? last.error : undefined
      expect(error?._tag).toBe("PollTimeout")
      expect(error?._tag === "PollTimeout" && error.transactionId).toBe("TX")
      expect(error?._tag === "PollTimeout" && error.lastPercentComplete).toBe(10)
    }))

  it.effect("a transient GET failure becomes a Retrying event and polling goes on", () =>
    Effect.gen(function*() {
      const { calls, events } = yield* run([unavailable, unavailable, status(100, true)], {
        schedule: noJitter,
        expectedCompletionTime: 1
      })
      expect(calls).toEqual([1000, 1250, 1750])
      expect(events.map((e) => e._tag)).toEqual(["Retrying", "Retrying", "Progress", "Completed"])
      const retrying = events[0]!
      expect(retrying._tag === "Retrying" && [retrying.attempt, Duration.toMillis(retrying.delay)]).toEqual([2, 250])
    }))

  it.effect("Retry-After is waited for before the next GET and shown as the Retrying delay", () =>
    Effect.gen(function*() {
      const hinted = new Errors.ServiceUnavailable({ message: "HTTP 503", httpStatus: 503, retryAfterMillis: 3000 })
      const { calls, events } = yield* run([hinted, status(100, true)], { schedule: noJitter })
      expect(calls).toEqual([0, 3000])
      const retrying = events[0]!
      expect(retrying._tag === "Retrying" && Duration.toMillis(retrying.delay)).toBe(3000)
    }))

  it.effect("a Retry-After past the deadline is cut short by it: PollTimeout on time", () =>
    Effect.gen(function*() {
      const hinted = new Errors.ServiceUnavailable({ message: "HTTP 503", httpStatus: 503, retryAfterMillis: 600_000 })
      const { calls, events } = yield* run([hinted], { schedule: noJitter, deadline: "5 seconds" })
      expect(calls).toEqual([0])
      const retrying = events[0]!
      expect(retrying._tag === "Retrying" && Duration.toMillis(retrying.delay)).toBe(5000)
      const last = events.at(-1)!
      expect(last._tag === "Failed" && [last.error._tag, last.timestamp.epochMilliseconds]).toEqual([
        "PollTimeout",
        5000
      ])
    }))

  it.effect("a card outcome is one Failed event with its user message", () =>
    Effect.gen(function*() {
      const invalid = new Errors.InvalidCard({ message: "m", userMessage: "Check the PIN", httpStatus: 400 })
      const { calls, events } = yield* run([invalid], { schedule: noJitter })
      expect(calls).toEqual([0])
      expect(events.length).toBe(1)
      const failed = events[0]!
      expect(failed._tag === "Failed" && failed.error._tag).toBe("InvalidCard")
      expect(failed._tag === "Failed" && "userMessage" in failed.error && failed.error.userMessage).toBe(
        "Check the PIN"
      )
    }))

  it.effect("any Schedule can replace the default", () =>
    Effect.gen(function*() {
      const { calls } = yield* run([status(1), status(2), status(3, true)], {
        schedule: PollSchedule.fixed("1 second")
      })
      expect(calls).toEqual([1000, 2000, 3000])
    }))

  it.effect("interrupting the stream stops polling at once", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make<Array<Call>>([])
      const idle = yield* Idle.make
      const fiber = yield* Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
        Stream.runDrain(poller.track("TX", { schedule: noJitter }))).pipe(
          Effect.provide(pollerOver(() => [status(10)], calls)),
          Effect.forkChild,
          idle.track
        )
      yield* settleAndAdjust(idle, "1 second")
      const before = (yield* Ref.get(calls)).length
      yield* Fiber.interrupt(fiber)
      yield* settleAndAdjust(idle, "10 minutes")
      expect(before).toBe(3) // at 0, 250 and 750 ms
      expect((yield* Ref.get(calls)).length).toBe(before)
    }))

  it.effect("the deadline bounds a GET that hangs, retries included", () =>
    Effect.gen(function*() {
      const { calls, events } = yield* run([status(10), "hang"], { schedule: noJitter, deadline: "5 seconds" })
      expect(calls).toEqual([0, 250])
      const last = events.at(-1)!
      expect(last._tag === "Failed" && last.error._tag).toBe("PollTimeout")
      expect(last.timestamp.epochMilliseconds).toBe(5000)
    }))

  it.effect("a transient token failure mid-poll does not end the quote; refused credentials do", () =>
    Effect.gen(function*() {
      const blip = new Errors.TokenError({ message: "token endpoint: HTTP 503", httpStatus: 503 })
      const recovered = yield* run([blip, status(100, true)], { schedule: noJitter })
      expect(recovered.events.map((e) => e._tag)).toEqual(["Retrying", "Progress", "Completed"])
      const refused = new Errors.TokenError({
        message: "invalid_client",
        httpStatus: 401,
        oauthError: "invalid_client"
      })
      const ended = yield* run([refused], { schedule: noJitter })
      expect(ended.events.map((e) => e._tag === "Failed" && e.error._tag)).toEqual(["TokenError"])
    }))

  it.effect("undecodable answers are polled through, but three in a row end the quote", () =>
    Effect.gen(function*() {
      const garbled = Errors.unexpectedResponse({ httpStatus: 200 }, "body is not JSON")
      const through = yield* run([unavailable, garbled, unavailable, garbled, status(100, true)], {
        schedule: noJitter
      })
      expect(through.events.at(-1)?._tag).toBe("Completed")
      const ended = yield* run([garbled, garbled, garbled, status(100, true)], { schedule: noJitter })
      expect(ended.calls.length).toBe(3)
      expect(ended.events.at(-1)?._tag === "Failed" && (ended.events.at(-1) as any).error._tag).toBe(
        "UnexpectedResponse"
      )
    }))

  it.effect("trackAll polls every transaction on its own hint, as one stream", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make<Array<Call>>([])
      const idle = yield* Idle.make
      const fiber = yield* Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
        Stream.runCollect(
          poller.trackAll(
            [
              { transactionId: "A", expectedCompletionTime: 3 },
              "B",
              { transactionId: "C", expectedCompletionTime: 1 }
            ],
            { schedule: noJitter }
          )
        )).pipe(
          Effect.provide(pollerOver((id) => id === "B" ? [status(50), status(100, true)] : [status(100, true)], calls)),
          Effect.forkChild,
          idle.track
        )
      yield* settleAndAdjust(idle, "1 minute")
      const events = yield* Fiber.join(fiber)
      expect(yield* Ref.get(calls)).toEqual([
        { transactionId: "B", at: 0 },
        { transactionId: "B", at: 250 },
        { transactionId: "C", at: 1000 },
        { transactionId: "A", at: 3000 }
      ])
      const terminals = events.filter(QuoteEvent.isTerminal)
      expect(terminals.map((event) => [event.transactionId, event._tag])).toEqual([
        ["B", "Completed"],
        ["C", "Completed"],
        ["A", "Completed"]
      ])
    }))

  it.effect("maxConcurrentPolls bounds the GETs in flight: a due poll waits for a free slot", () =>
    Effect.gen(function*() {
      const { calls, hangs, other } = yield* besideAHangingGet("5 seconds", { transactionId: "QUICK" })
      // QUICK was due at 0, but its GET waited for the hanging one to end at its deadline.
      expect(calls).toEqual([{ transactionId: "HANGS", at: 0 }, { transactionId: "QUICK", at: 5000 }])
      expect(hangs.map((event) => event._tag === "Failed" && event.error._tag)).toEqual(["PollTimeout"])
      expect(other.at(-1)?._tag).toBe("Completed")
    }))

  it.effect("a poller that shuts down ends its open streams as interrupted instead of leaving them waiting", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make<Array<Call>>([])
      const scope = yield* Scope.make()
      const idle = yield* Idle.make
      const context = yield* idle.track(Layer.buildWithScope(pollerOver(() => [status(10)], calls), scope))
      const poller = Context.get(context, QuotePoller.QuotePoller)
      const fiber = yield* idle.track(Effect.forkChild(Stream.runDrain(poller.track("TX", { schedule: noJitter }))))
      yield* settleAndAdjust(idle, "1 second")
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.hasInterrupts(exit)).toBe(true)
    }))

  it.effect("deadlines hold while every GET slot is taken: a waiting quote times out without a GET", () =>
    Effect.gen(function*() {
      // WAITS is due at 500 ms, when the only slot is taken.
      const { calls, hangs, other } = yield* besideAHangingGet("1 minute", {
        transactionId: "WAITS",
        deadline: "1 second",
        expectedCompletionTime: 0.5
      })
      expect(calls).toEqual([{ transactionId: "HANGS", at: 0 }])
      expect(other.map((event) => event._tag === "Failed" && event.error._tag)).toEqual(["PollTimeout"])
      expect(other[0]!.timestamp.epochMilliseconds).toBe(1000)
      expect(hangs.at(-1)?.timestamp.epochMilliseconds).toBe(60_000)
    }))

  it.live("closing watches at any moment gives their GET slots back: the poller never stalls", () =>
    Effect.gen(function*() {
      // With one slot, close a stream a few scheduler steps after its first GET, so that its
      // next GET fiber is interrupted at every stage, before it starts included; the next quote
      // must still be polled.
      for (let steps = 0; steps < 8; steps++) {
        const calls = yield* Ref.make<Array<Call>>([])
        const layer = pollerOver(() => [status(100, true)], calls, { maxConcurrentPolls: 1 })
        const next = yield* Effect.gen(function*() {
          const poller = yield* QuotePoller.QuotePoller
          const first = yield* Effect.forkChild(Stream.runDrain(poller.trackAll(["X", "Y"], { schedule: noJitter })))
          while ((yield* Ref.get(calls)).length === 0) yield* Effect.yieldNow
          for (let i = 0; i < steps; i++) yield* Effect.yieldNow
          yield* Fiber.interrupt(first)
          return yield* Stream.runCollect(poller.track("B", { deadline: "1 second" })).pipe(
            Effect.timeout("5 seconds")
          )
        }).pipe(Effect.provide(layer))
        expect(Option.fromNullishOr(next.at(-1)).pipe(Option.map((event) => event._tag))).toEqual(
          Option.some("Completed")
        )
      }
    }))

  it.live("the engine keeps its own clock: a caller on another clock changes no due time", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make<Array<Call>>([])
      // The poller runs on the live clock; its caller on a TestClock that never moves.
      const context = yield* Layer.build(
        pollerOver((id) => id === "TX" ? [status(10), status(50), status(100, true)] : [], calls)
      )
      const poller = Context.get(context, QuotePoller.QuotePoller)
      const events = yield* Stream.runCollect(poller.track("TX", { schedule: PollSchedule.fixed("20 millis") })).pipe(
        Effect.provide(TestClock.layer()),
        Effect.timeout("5 seconds")
      )
      expect(Option.fromNullishOr(events.at(-1)).pipe(Option.map((event) => event._tag))).toEqual(
        Option.some("Completed")
      )
      // The GETs ran on the live clock, 20 ms apart.
      const times = (yield* Ref.get(calls)).map((call) => call.at)
      expect(times.length).toBe(3)
      expect(times.slice(1).every((at, i) => at - times[i]! >= 15)).toBe(true)
    }).pipe(Effect.scoped))
})
