/**
 * `POST /v1/quotes` with `Prefer: wait=N` over real HTTP (a real server, the
 * durable engine on SQLite, a real sandbox): the outcome in the POST's own
 * answer when the quote ends in time, else the 202 of a POST that does not
 * wait; and the header's parsing.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import { Sandbox, TestData } from "@gcx/sandbox"
import * as EventLog from "@gcx/workflow/EventLog"
import { Cause, ConfigProvider, DateTime, Effect, Exit, Fiber, Layer, Metric, Option, Result, Stream } from "effect"
import type { HttpBody, HttpServerResponse } from "effect/http"
import * as EventStream from "../src/EventStream.js"
import * as Gateway from "../src/Gateway.js"
import * as GatewayErrors from "../src/GatewayErrors.js"
import * as KeepAlives from "../src/internal/keepAlives.js"
import * as Middleware from "../src/internal/middleware.js"
import * as Prefer from "../src/internal/prefer.js"
import * as Settled from "../src/internal/settled.js"
import { call, cardBody, keys, type Running, sandbox, start, type StartOptions } from "./utils/gateway.js"

const withGateway = <A, E>(
  test: (gateway: Running) => Effect.Effect<A, E>,
  service = sandbox,
  options: StartOptions = {}
) =>
  Effect.gen(function*() {
    return yield* test(yield* start(options))
  }).pipe(Effect.scoped, Effect.provide(service))

const post = (gateway: Running, idempotencyKey: string, cardNumber: string, prefer?: string, key: string = keys.a) =>
  call(`${gateway.url}/v1/quotes`, {
    method: "POST",
    key,
    idempotencyKey,
    body: cardBody(cardNumber),
    ...(prefer === undefined ? {} : { headers: { prefer } })
  })

const transactionsOf = (gateway: Running, requestId: string) =>
  Effect.map(gateway.sandbox.transactions, (all) => all.filter((transaction) => transaction.requestId === requestId))

describe("Prefer.parseWait", () => {
  it("reads wait among other preferences, quoted or not, the first of several; caps it; refuses a bad one", () => {
    const waitOf = (header: string | undefined) => Result.getOrThrow(Prefer.parseWait(header))
    expect(waitOf(undefined)).toBe(0)
    expect(waitOf("wait=10")).toBe(10)
    expect(waitOf("respond-async, wait=5")).toBe(5)
    expect(waitOf("Wait = \"7\"; foo=bar")).toBe(7)
    expect(waitOf("wait=3, wait=9")).toBe(3)
    expect(waitOf("handling=lenient, return=minimal")).toBe(0)
    expect(waitOf("wait=0")).toBe(0)
    expect(waitOf("wait=3600")).toBe(Prefer.maxWaitSeconds)
    expect(waitOf("wait=99999999999999999999999")).toBe(Prefer.maxWaitSeconds)
    expect(waitOf("wait=0000000000005")).toBe(5)
    expect(waitOf("respond-async, wait=\"12345678901\"")).toBe(Prefer.maxWaitSeconds)
    // commas and semicolons inside another preference's quoted value are not separators
    expect(waitOf("foo=\"a,wait=x\", wait=5")).toBe(5)
    expect(waitOf("foo=\"x, wait=3\"")).toBe(0)
    expect(waitOf("wait=10; note=\"a;b,c\"")).toBe(10)
    expect(waitOf("foo=\"say \\\"hi, wait=3\\\"\", wait=4")).toBe(4)
    expect(waitOf("wait=\"\\5\"")).toBe(5)
    // a quote left open: where the preferences end is unknown, so a wait could go unseen
    const open = Prefer.parseWait("foo=\"x, wait=5")
    assert.isTrue(Result.isFailure(open))
    if (Result.isFailure(open)) expect(open.failure).toBe("Prefer: a quoted value is not closed")
    for (const bad of ["wait=soon", "wait=", "wait=-1", "wait=1.5", "wait", "wait=1e3", "wait=+5", "wait=0x10"]) {
      const refused = Prefer.parseWait(bad)
      assert.isTrue(Result.isFailure(refused), bad)
      if (Result.isFailure(refused)) expect(refused.failure).toContain("Prefer: wait must be a whole number of seconds")
    }
  })
})

/**
 * An event log whose quotes record no event: each cursor's first read yields (as I/O would, so that
 * streams opened at once all read before any of them goes on), then it waits for good.
 */
const quietLog = (next: EventLog.Cursor["next"] = Effect.never): EventLog.Service => ({
  read: () => Effect.succeed([]),
  follow: () => Stream.empty,
  cursor: () => Effect.succeed({ poll: Effect.as(Effect.yieldNow, []), next, wake: () => {} })
})

const quote = "0a".repeat(16)

describe("Settled.wait", () => {
  it.effect("events that end without a terminal one are no ended quote: the POST answers 202", () =>
    Effect.gen(function*() {
      const waited = yield* Settled.wait(quote, 1, "key_a").pipe(
        Effect.provideService(EventLog.EventLog, quietLog(Effect.succeed(undefined)))
      )
      expect(waited).toEqual({ view: Option.none(), waited: true })
    }))
})

describe("a key's places (KeepAlives.MaxHeld)", () => {
  it.effect("waits and streams take them, one at a time even at once; a key past them waits not and streams not", () =>
    Effect.gen(function*() {
      const log = quietLog()
      const within = <A, E>(effect: Effect.Effect<A, E, EventLog.EventLog>) =>
        effect.pipe(Effect.provideService(EventLog.EventLog, log), Effect.provideService(KeepAlives.MaxHeld, 2))
      const heldReaches = (holder: string, count: number) =>
        Effect.gen(function*() {
          for (let turn = 0; turn < 1_000 && KeepAlives.heldBy(log, holder) !== count; turn++) yield* Effect.yieldNow
          expect(KeepAlives.heldBy(log, holder)).toBe(count)
        })
      const stream = (holder: string) => within(EventStream.response(quote, Option.none(), holder))

      // two waiting POSTs of key A hold its two places
      const waits = yield* Effect.forEach([1, 2], () => Effect.forkChild(within(Settled.wait(quote, 30, "key_a"))))
      yield* heldReaches("key_a", 2)
      // a third is granted no wait, at once; a stream that would wait is refused; key B is not held by A
      expect(yield* within(Settled.wait(quote, 30, "key_a"))).toEqual({ view: Option.none(), waited: false })
      expect(yield* Effect.flip(stream("key_a"))).toBe(GatewayErrors.tooManyHeld)
      const ofB = yield* Effect.forkChild(stream("key_b"))
      yield* heldReaches("key_b", 1)
      // a wait that ends gives its place back
      yield* Fiber.interrupt(waits[0]!)
      expect(KeepAlives.heldBy(log, "key_a")).toBe(1)
      // ten streams at once for the one place left (forked together: none runs before the last is forked):
      // one takes it, nine are refused
      const racing = yield* Effect.forEach(
        Array.from({ length: 10 }),
        () => Effect.forkChild(Effect.flip(stream("key_a")))
      )
      yield* heldReaches("key_a", 2)
      for (let turn = 0; turn < 100; turn++) yield* Effect.yieldNow
      const refused = racing.filter((fiber) => fiber.pollUnsafe() !== undefined)
      expect(refused).toHaveLength(9)
      for (const fiber of refused) expect(yield* Fiber.join(fiber)).toBe(GatewayErrors.tooManyHeld)
      yield* Fiber.interruptAll([...waits, ...racing, ofB])
      expect(KeepAlives.heldBy(log, "key_a")).toBe(0)
      expect(KeepAlives.heldBy(log, "key_b")).toBe(0)
    }))
})

describe("a stream that loses the race for its key's last place", () => {
  it.effect("sends the events recorded, then ends: its client resumes after them", () =>
    Effect.gen(function*() {
      const submitted: EventLog.Entry = {
        seq: 1,
        event: new QuoteEvent.Submitted({
          transactionId: "tx-1",
          timestamp: DateTime.makeUnsafe("2026-11-30T04:00:00Z"),
          requestId: quote
        })
      }
      // the quote has its first event and no more: a stream starts with it, then follows
      const log: EventLog.Service = {
        read: () => Effect.succeed([submitted]),
        follow: () => Stream.empty,
        cursor: () => Effect.succeed({ poll: Effect.succeed([submitted]), next: Effect.never, wake: () => {} })
      }
      const within = <A, E>(effect: Effect.Effect<A, E, EventLog.EventLog>) =>
        effect.pipe(Effect.provideService(EventLog.EventLog, log), Effect.provideService(KeepAlives.MaxHeld, 1))
      const bodyOf = (response: HttpServerResponse.HttpServerResponse) =>
        Stream.decodeText((response.body as HttpBody.Stream).stream)
      // two streams of a key with one place, opened before either follows: both pass the check
      const first = yield* within(EventStream.response(quote, Option.none(), "key_a"))
      const second = yield* within(EventStream.response(quote, Option.none(), "key_a"))
      // the first follows and takes the place; the second, following after it, sends its event and ends
      const following = yield* Effect.forkChild(within(Stream.runCollect(bodyOf(first))))
      for (let turn = 0; turn < 1_000 && KeepAlives.heldBy(log, "key_a") !== 1; turn++) yield* Effect.yieldNow
      expect(KeepAlives.heldBy(log, "key_a")).toBe(1)
      const sent = (yield* within(Stream.runCollect(bodyOf(second)))).join("")
      expect(sent).toBe(EventStream.message(submitted))
      expect(KeepAlives.heldBy(log, "key_a")).toBe(1)
      yield* Fiber.interrupt(following)
      expect(KeepAlives.heldBy(log, "key_a")).toBe(0)
    }))
})

describe("Gateway.Options.maxHeldPerKey", () => {
  it.effect("is read from GCX_GATEWAY_MAX_HELD_PER_KEY by layerConfig: 1,000 when unset; a bad one names it", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.result(Gateway.maxHeldConfig).pipe(
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
        )
      expect(yield* read({})).toEqual(Result.succeed(1_000))
      expect(yield* read({ GCX_GATEWAY_MAX_HELD_PER_KEY: "5" })).toEqual(Result.succeed(5))
      for (const bad of ["0", "1.5", "-2", "many"]) {
        const refused = yield* read({ GCX_GATEWAY_MAX_HELD_PER_KEY: bad })
        assert.isTrue(Result.isFailure(refused), bad)
        if (Result.isFailure(refused)) expect(String(refused.failure)).toContain("GCX_GATEWAY_MAX_HELD_PER_KEY")
      }
    }))

  it.effect("is a whole number above 0: anything else is a defect that names it, before the server starts", () =>
    Effect.gen(function*() {
      for (const maxHeldPerKey of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        // refused before any of the layer's services is asked for: none is given
        const layer = Gateway.layer({ port: 0, maxHeldPerKey }) as Layer.Layer<unknown, unknown>
        const exit = yield* Effect.exit(Layer.build(layer).pipe(Effect.scoped))
        assert.isTrue(Exit.isFailure(exit))
        expect(String(Cause.squash((exit as Exit.Failure<unknown, unknown>).cause))).toContain(
          `maxHeldPerKey must be a whole number above 0, not ${maxHeldPerKey}`
        )
      }
    }))
})

describe("POST /v1/quotes with Prefer: wait", () => {
  it.live("a quote that ends in time is answered 200 with its outcome, as GET shows it; one transaction", () =>
    withGateway((gateway) =>
      Effect.gen(function*() {
        // instant: the POST to the service answers completed; success: completed after progress events
        for (
          const [order, card, value] of [["order-i", TestData.Cards.instant, "50.00"], [
            "order-s",
            TestData.Cards.success,
            "100.00"
          ]] as const
        ) {
          const posted = yield* post(gateway, order, card, "wait=10")
          expect(posted.status).toBe(200)
          expect(posted.headers.get("preference-applied")).toBe("wait=10")
          const id: string = posted.json.id
          expect(posted.headers.get("location")).toBe(`/v1/quotes/${id}`)
          expect(posted.headers.get("content-location")).toBe(`/v1/quotes/${id}`)
          expect(posted.json).toMatchObject({
            id,
            status: "completed",
            percentComplete: 100,
            outcome: { actualCardValue: value },
            links: { self: `/v1/quotes/${id}`, events: `/v1/quotes/${id}/events` }
          })
          const got = yield* call(`${gateway.url}/v1/quotes/${id}`, { key: keys.a })
          expect(posted.json).toEqual(got.json)
          const transactions = yield* transactionsOf(gateway, id)
          expect(transactions).toHaveLength(1)
          expect(posted.json.outcome.transactionId).toBe(transactions[0]!.transactionId)
          expect(posted.text).not.toContain(card)
        }
        // counted and timed as their own route, apart from the submits that do not wait
        const waited = (yield* Metric.snapshot).find((snapshot) =>
          snapshot.id === "gcx.gateway.requests" && snapshot.attributes?.["gcx.gateway.route"] === "submit_wait" &&
          snapshot.attributes["http.response.status_code"] === "200"
        )
        expect((waited?.state as { readonly count: number } | undefined)?.count).toBeGreaterThanOrEqual(2)
        const timed = (yield* Metric.snapshot).find((snapshot) =>
          snapshot.id === "gcx.gateway.request.duration" && snapshot.attributes?.["gcx.gateway.route"] === "submit_wait"
        )
        const histogram = timed?.state as { readonly count: number; readonly buckets: ReadonlyArray<[number, number]> }
        expect(histogram.count).toBeGreaterThanOrEqual(2)
        // buckets past the client's 10 s, up to a minute: a wait of up to 30 s is measured, not +Inf
        expect(histogram.buckets.map(([boundary]) => boundary)).toEqual(expect.arrayContaining([15, 30, 60]))
        expect(Middleware.routeOf("POST", "/v1/quotes", "respond-async, wait=5")).toBe("submit_wait")
        expect(Middleware.routeOf("POST", "/v1/quotes", "wait=0")).toBe("submit")
        expect(Middleware.routeOf("POST", "/v1/quotes", "wait=soon")).toBe("submit")
        expect(Middleware.routeOf("POST", "/v1/quotes")).toBe("submit")
      })
    ))

  it.live("a failed quote is 200 with its error; a replay of an ended quote is 200 at once, the same quote", () =>
    withGateway((gateway) =>
      Effect.gen(function*() {
        const failed = yield* post(gateway, "order-zero", TestData.Cards.zeroBalance, "wait=10")
        expect(failed.status).toBe(200)
        expect(failed.json).toMatchObject({ status: "failed", error: { code: "CardValueOutOfRange", group: "card" } })
        expect(failed.json.outcome).toBeUndefined()
        const replayed = yield* post(gateway, "order-zero", TestData.Cards.zeroBalance, "wait=10")
        expect(replayed.status).toBe(200)
        expect(replayed.json).toEqual(failed.json)
        // the replay checked nothing again
        expect(yield* transactionsOf(gateway, failed.json.id)).toHaveLength(1)
        // without the preference, the replay is the 202 it always was
        const plain = yield* post(gateway, "order-zero", TestData.Cards.zeroBalance)
        expect(plain.status).toBe(202)
        expect(plain.headers.get("preference-applied")).toBeNull()
        expect(plain.json).toEqual({ id: failed.json.id, status: "failed", links: failed.json.links })
      })
    ))

  it.live("a wait past the cap is granted the cap; other preferences are ignored", () =>
    withGateway((gateway) =>
      Effect.gen(function*() {
        const capped = yield* post(gateway, "order-cap", TestData.Cards.instant, "respond-async, wait=3600")
        expect(capped.status).toBe(200)
        expect(capped.headers.get("preference-applied")).toBe(`wait=${Prefer.maxWaitSeconds}`)
        const other = yield* post(gateway, "order-other", TestData.Cards.instant, "return=minimal")
        expect(other.status).toBe(202)
        expect(other.headers.get("preference-applied")).toBeNull()
      })
    ))

  it.live("a bad wait is 400 naming the header, before any I/O", () =>
    withGateway((gateway) =>
      Effect.gen(function*() {
        const refused = yield* post(gateway, "order-bad", TestData.Cards.instant, "wait=soon")
        expect(refused.status).toBe(400)
        expect(refused.json).toEqual({
          error: { code: "invalid_request", message: "Prefer: wait must be a whole number of seconds, e.g. wait=10" }
        })
        expect(yield* gateway.sandbox.transactions).toHaveLength(0)
        // the Idempotency-Key was not taken: the same key with a good header is a new quote
        const accepted = yield* post(gateway, "order-bad", TestData.Cards.instant, "wait=5")
        expect(accepted.status).toBe(200)
      })
    ))

  it.live("a quote still running when the wait is over is answered 202 pending; it runs on", () =>
    // at time scale 1, the slow card completes about 30 s after its POST
    withGateway(
      (gateway) =>
        Effect.gen(function*() {
          const started = Date.now()
          const posted = yield* post(gateway, "order-slow", TestData.Cards.slow, "wait=1")
          const took = Date.now() - started
          expect(posted.status).toBe(202)
          expect(posted.headers.get("preference-applied")).toBe("wait=1")
          expect(posted.json).toMatchObject({ status: "pending" })
          expect(took).toBeGreaterThanOrEqual(990)
          expect(took).toBeLessThan(5_000)
          expect(yield* transactionsOf(gateway, posted.json.id)).toHaveLength(1)
        }),
      Sandbox.layer({ logLevel: "None", timeScale: 1 })
    ), 20_000)

  it.live(
    "a key holds at most maxHeldPerKey streams and waiting POSTs: past it, a stream is 429 and a POST does not wait",
    () =>
      // at time scale 1, the slow card is pending for about 30 s: its streams and waits stay open
      withGateway(
        (gateway) =>
          Effect.gen(function*() {
            const done = yield* post(gateway, "order-done", TestData.Cards.instant, "wait=10")
            expect(done.status).toBe(200)
            const quote = yield* post(gateway, "order-held", TestData.Cards.slow)
            const events = `${gateway.url}/v1/quotes/${quote.json.id}/events`
            // two streams of key A, held open (each reads its first events, then waits for more)
            const held = yield* Effect.forEach([1, 2], () =>
              Effect.promise(async () => {
                const controller = new AbortController()
                const response = await fetch(events, {
                  headers: { authorization: `Bearer ${keys.a}` },
                  signal: controller.signal
                })
                const reader = response.body!.getReader()
                await reader.read()
                return { status: response.status, close: () => controller.abort() }
              }))
            expect(held.map((stream) => stream.status)).toEqual([200, 200])
            // the third: refused while they are open, with when to try again
            const refused = yield* call(events, { key: keys.a })
            expect(refused.status).toBe(429)
            expect(refused.headers.get("retry-after")).toBe("15")
            expect(refused.json.error).toEqual({
              code: "rate_limited",
              message: expect.stringContaining("open event streams")
            })
            // a POST that asks to wait is answered at once, as without the header
            const started = Date.now()
            const unwaited = yield* post(gateway, "order-held-2", TestData.Cards.slow, "wait=5")
            expect(unwaited.status).toBe(202)
            expect(unwaited.headers.get("preference-applied")).toBeNull()
            expect(Date.now() - started).toBeLessThan(4_000)
            // what holds nothing is answered all the same: an ended quote, its POST repeated and its stream
            const repeated = yield* post(gateway, "order-done", TestData.Cards.instant, "wait=10")
            expect(repeated.status).toBe(200)
            expect(repeated.json).toEqual(done.json)
            const whole = yield* call(`${gateway.url}/v1/quotes/${done.json.id}/events`, { key: keys.a })
            expect(whole.status).toBe(200)
            expect(whole.text).toContain("event: Completed")
            // another key is not held by A's
            const quoteB = yield* post(gateway, "order-b", TestData.Cards.slow, undefined, keys.b)
            const streamB = yield* Effect.promise(async () => {
              const controller = new AbortController()
              const response = await fetch(`${gateway.url}/v1/quotes/${quoteB.json.id}/events`, {
                headers: { authorization: `Bearer ${keys.b}` },
                signal: controller.signal
              })
              await response.body!.getReader().read()
              controller.abort()
              return response.status
            })
            expect(streamB).toBe(200)
            // one of A's closed: A opens again
            held[0]!.close()
            let reopened = 429
            for (let attempt = 0; attempt < 100 && reopened === 429; attempt++) {
              yield* Effect.sleep("20 millis")
              const answer = yield* Effect.promise(async () => {
                const controller = new AbortController()
                const response = await fetch(events, {
                  headers: { authorization: `Bearer ${keys.a}` },
                  signal: controller.signal
                })
                if (response.status === 200) await response.body!.getReader().read()
                controller.abort()
                return response.status
              })
              reopened = answer
            }
            expect(reopened).toBe(200)
            held[1]!.close()
          }),
        Sandbox.layer({ logLevel: "None", timeScale: 1 }),
        { maxHeldPerKey: 2 }
      ),
    30_000
  )
})
