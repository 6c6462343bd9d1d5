/**
 * The event stream of a quote over real HTTP (`EventStream.response` behind a tiny router on a free
 * loopback port), from embedded durable quotes on SQLite in a temporary file, over a real sandbox:
 * a stream dropped mid-quote and resumed with `Last-Event-ID` has no gap and no repeat and ends after
 * the terminal event; a completed quote replays whole, then the response closes; no card data in a byte.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, it, layer } from "@effect/vitest"
import * as Quote from "@gcx/core/Quote"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import { ExchangeClient } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { CardCipher, DurableQuotes, Embedded, EventLog } from "@gcx/workflow"
import { BigDecimal, DateTime, Effect, Fiber, Layer, Logger, Option, Queue, Result, Schedule, Stream } from "effect"
import type { HttpBody } from "effect/http"
import { FetchHttpClient, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlError } from "effect/sql"
import { TestClock } from "effect/testing"
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import * as Path from "node:path"
import * as EventStream from "../src/EventStream.js"
import * as GatewayErrors from "../src/GatewayErrors.js"
import * as Drain from "../src/internal/drain.js"
import * as KeepAlives from "../src/internal/keepAlives.js"
import { tempDirectory } from "./utils/gateway.js"

/** The route of the gateway's event stream, with the api's mapping of a bad `Last-Event-ID` to 400. */
const routes = HttpRouter.add(
  "GET",
  "/v1/quotes/:id/events",
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.params
    const request = yield* HttpServerRequest.HttpServerRequest
    const last = EventStream.parseLastEventId(request.headers["last-event-id"])
    if (Result.isFailure(last)) return HttpServerResponse.text(last.failure.message, { status: 400 })
    return yield* EventStream.response(id!, last.success, "key_a")
  })
)

/** A message of the stream as the client parses it. */
interface Message {
  readonly id: number
  readonly event: string
  readonly data: Record<string, unknown>
}

interface Received {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly messages: ReadonlyArray<Message>
  /** Whether the server closed the response (not the client). */
  readonly closed: boolean
}

/** Reads the event stream at `url` until the server closes it, or drops it after `dropAfter` messages. */
const receive = (url: string, options: { readonly lastEventId?: string; readonly dropAfter?: number } = {}) =>
  Effect.promise(async (): Promise<Received> => {
    const controller = new AbortController()
    const response = await fetch(url, {
      headers: options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId },
      signal: controller.signal
    })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ""
    let parsed = 0
    const messages: Array<Message> = []
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { status: response.status, headers: response.headers, text, messages, closed: true }
      text += decoder.decode(value, { stream: true })
      for (let end = text.indexOf("\n\n", parsed); end >= 0; end = text.indexOf("\n\n", parsed)) {
        const block = text.slice(parsed, end)
        parsed = end + 2
        const fields = Object.fromEntries(
          block.split("\n").filter((line) => !line.startsWith(":")).map((line) => {
            const colon = line.indexOf(": ")
            return [line.slice(0, colon), line.slice(colon + 2)]
          })
        )
        if (fields.id === undefined) continue
        messages.push({ id: Number(fields.id), event: fields.event!, data: JSON.parse(fields.data!) })
      }
      if (options.dropAfter !== undefined && messages.length >= options.dropAfter) {
        controller.abort()
        return { status: response.status, headers: response.headers, text, messages, closed: false }
      }
    }
  }).pipe(Effect.timeout("20 seconds"))

/** Card input for a scenario card. */
const card = (cardNumber: string, pinNumber: string = TestData.pin) => ({
  cardNumber,
  pinNumber,
  productLineId: TestData.defaultProductLineId
})

/** A card of several polls, with a sentinel PIN. */
const slowCard = () => card(TestData.Cards.slow, `PIN-SENTINEL-${randomBytes(4).toString("hex")}`)

/** A fresh database file in a temporary directory, removed with the scope. */
const tempDatabase = Effect.map(tempDirectory, (directory) => Path.join(directory, "gcx.db"))

/** Durable quotes embedded in `filename`, polling every 100 ms (several progress events per quote), for `server`. */
const quotesLayer = (server: Sandbox.Service, filename: string) =>
  Embedded.layerQuotes({ filename, track: { schedule: Schedule.spaced("100 millis") } }).pipe(
    Layer.provide(CardCipher.layer(CardCipher.generateKey())),
    Layer.provide(ExchangeClient.layerWith({
      ...Sandbox.clientOptions(server),
      retry: { baseDelay: "10 millis", maxDelay: "200 millis", budget: { capacity: 1000, refillPerSecond: 100 } }
    })),
    Layer.provide(FetchHttpClient.layer),
    Layer.orDie
  )

/** The gateway's stream served over the embedded quotes of a fresh database; runs `f` with its base URL. */
const withGateway = <A, E, R>(f: (base: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const server = yield* Sandbox.SandboxServer
    const quotes = quotesLayer(server, yield* tempDatabase)
    return yield* Effect.gen(function*() {
      const base = yield* HttpServer.HttpServer.use((http) => Effect.succeed(HttpServer.formatAddress(http.address)))
      return yield* f(base.replace(/\/$/, ""))
    }).pipe(
      Effect.provide(
        HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port: 0, host: "127.0.0.1" })),
          Layer.provideMerge(EventLog.layer()),
          Layer.provideMerge(quotes)
        ),
        { local: true }
      )
    )
  }).pipe(Effect.scoped)

/** Asserts the messages of a quote's whole stream: ids 1..n, `Submitted` first, the terminal event last and only there. */
const expectWhole = (messages: ReadonlyArray<Message>) => {
  expect(messages.map((message) => message.id)).toEqual(messages.map((_, index) => index + 1))
  expect(messages[0]?.event).toBe("Submitted")
  const terminal = messages.flatMap((message, index) =>
    message.event === "Completed" || message.event === "Failed" ? [index] : []
  )
  expect(terminal).toEqual([messages.length - 1])
}

layer(Sandbox.layer({ logLevel: "None", timeScale: 0.05 }), { excludeTestServices: true })(
  "EventStream over HTTP",
  (it) => {
    it.effect("a stream dropped mid-quote resumes with Last-Event-ID: no gap, no repeat, ends after the terminal event", () =>
      withGateway((base) =>
        Effect.gen(function*() {
          const input = slowCard()
          const requestId = yield* Effect.flatMap(DurableQuotes.DurableQuotes, (durable) => durable.submit(input))
          const url = `${base}/v1/quotes/${requestId}/events`
          const first = yield* receive(url, { dropAfter: 2 })
          expect(first.status).toBe(200)
          expect(first.headers.get("content-type")).toContain("text/event-stream")
          expect(first.headers.get("cache-control")).toBe("no-cache")
          // a quote that runs is followed: the response is chunked
          expect(first.headers.get("transfer-encoding")).toBe("chunked")
          expect(first.closed).toBe(false)
          // the quote is still running when the stream is dropped
          expect(first.messages.some((message) => message.event === "Completed")).toBe(false)
          const lastId = first.messages[first.messages.length - 1]!.id
          const second = yield* receive(url, { lastEventId: String(lastId) })
          expect(second.closed).toBe(true)
          expect(second.messages[0]!.id).toBe(lastId + 1)
          const all = [...first.messages, ...second.messages]
          expectWhole(all)
          expect(all.length).toBeGreaterThan(4)
          const completed = all[all.length - 1]!
          expect(completed.event).toBe("Completed")
          expect(completed.data.outcome).toEqual({
            transactionId: completed.data.transactionId,
            actualCardValue: "250.00",
            exchangeCardValue: expect.stringMatching(/^\d+\.\d{2}$/)
          })
          expect(completed.data).not.toHaveProperty("quote")
          expect(all[0]!.data).not.toHaveProperty("card")
          expect(all[0]!.data).not.toHaveProperty("location")
          expect(all[0]!.data.requestId).toBe(requestId)
          for (const text of [first.text, second.text]) {
            expect(text).not.toContain(input.cardNumber)
            expect(text).not.toContain(input.pinNumber)
            expect(text).not.toContain("0068")
          }
          // the stream resumed after the terminal event ends at once, empty
          const after = yield* receive(url, { lastEventId: String(completed.id) })
          expect(after).toMatchObject({ status: 200, closed: true, messages: [] })
          // followed live (the writer's entries, handed over), it says what its replay (the table's) says
          expect((yield* receive(url)).messages).toEqual(all)
        })
      ))

    it.effect("a completed quote replays whole, then the response closes; a failed one ends with its error", () =>
      withGateway((base) =>
        Effect.gen(function*() {
          const durable = yield* DurableQuotes.DurableQuotes
          const done = yield* durable.submit(card(TestData.Cards.success))
          yield* durable.result(done)
          const replay = yield* receive(`${base}/v1/quotes/${done}/events`)
          expect(replay.closed).toBe(true)
          expectWhole(replay.messages)
          expect(replay.text.endsWith("\n\n")).toBe(true)
          // an ended quote is one answer, written at once with its length
          expect(replay.headers.get("content-type")).toContain("text/event-stream")
          expect(replay.headers.get("cache-control")).toBe("no-cache")
          expect(replay.headers.get("transfer-encoding")).toBeNull()
          expect(replay.headers.get("content-length")).toBe(String(Buffer.byteLength(replay.text)))
          // resumed mid-way, it gives what follows, the terminal event last
          const resumed = yield* receive(`${base}/v1/quotes/${done}/events`, { lastEventId: "1" })
          expect(resumed.messages).toEqual(replay.messages.slice(1))
          expect(resumed.headers.get("content-length")).toBe(String(Buffer.byteLength(resumed.text)))
          const invalid = yield* durable.submit(card(TestData.Cards.invalid))
          const failed = yield* receive(`${base}/v1/quotes/${invalid}/events`)
          expectWhole(failed.messages)
          const last = failed.messages[failed.messages.length - 1]!
          expect(last.event).toBe("Failed")
          expect(last.data.error).toMatchObject({ code: "InvalidCard", group: "card" })
          expect(last.data.error).toHaveProperty("userMessage")
          // followed live (the writer's entries, handed over), it says what its replay (the table's) says
          expect((yield* receive(`${base}/v1/quotes/${invalid}/events`)).text).toBe(failed.text)
        })
      ))

    it.effect("a Last-Event-ID that is not a whole number is refused (the api answers 400)", () =>
      withGateway((base) =>
        Effect.gen(function*() {
          for (const bad of ["x", "-1", "1.5", "1e3", "9".repeat(16)]) {
            expect(Result.isFailure(EventStream.parseLastEventId(bad))).toBe(true)
          }
          expect(EventStream.parseLastEventId(undefined)).toEqual(Result.succeed(Option.none()))
          expect(EventStream.parseLastEventId(" 7 ")).toEqual(Result.succeed(Option.some(7)))
          const response = yield* Effect.promise(() =>
            fetch(`${base}/v1/quotes/0123456789abcdef0123456789abcdef/events`, { headers: { "last-event-id": "abc" } })
          )
          expect(response.status).toBe(400)
          expect(yield* Effect.promise(() => response.text())).toContain("Last-Event-ID")
        })
      ))
  }
)

describe("EventStream keep-alive", () => {
  // a quote with no event yet: the log's cursor only answers when woken (the keep-alive is a timer, the log is not the subject)
  const cursor = Effect.map(Queue.sliding<void>(1), (signal): EventLog.Cursor => ({
    poll: Effect.succeed([]),
    next: Effect.as(Queue.take(signal), []),
    wake: () => Queue.offerUnsafe(signal, undefined)
  }))
  const quietLog = () =>
    Layer.succeed(EventLog.EventLog, {
      read: () => Effect.succeed([]),
      follow: () => Stream.never,
      cursor: () => cursor
    })
  /**
   * The first `count` chunks of a quiet stream's body, as text, in a fiber: the response waits for
   * the quote's first events, and starts with the keep-alive that wakes it.
   */
  const keepAlives = (count: number) =>
    Effect.gen(function*() {
      const response = yield* EventStream.response("quiet", Option.none(), "key_a")
      expect(response.body._tag).toBe("Stream")
      const body = (response.body as HttpBody.Stream).stream
      return yield* body.pipe(Stream.decodeText, Stream.take(count), Stream.runCollect)
    }).pipe(Effect.forkChild)

  it.effect("a log that cannot be read answers 503 before any event, its reason logged without the quote's data", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const down = new SqlError.SqlError({
        reason: new SqlError.ConnectionError({ cause: new Error("SENTINEL-DB-MESSAGE") })
      })
      const failing = Layer.succeed(EventLog.EventLog, {
        read: () => Effect.fail(down),
        follow: () => Stream.never,
        cursor: () => Effect.succeed({ poll: Effect.fail(down), next: Effect.die("not waited on"), wake: () => {} })
      })
      const error = yield* EventStream.response("quote-SENTINEL-ID", Option.none(), "key_a").pipe(
        Effect.flip,
        Effect.provide(failing),
        Effect.provide(Logger.layer([Logger.make((options) => lines.push(Logger.formatJson.log(options)))]))
      )
      expect(error).toBe(GatewayErrors.unavailable)
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain("ConnectionError")
      expect(lines.join("\n")).not.toMatch(/SENTINEL/)
    }))

  it.effect("an open stream with nothing to say sends `: keep-alive` every 15 s", () =>
    Effect.gen(function*() {
      const chunks = yield* keepAlives(2)
      yield* TestClock.adjust("14 seconds")
      expect(chunks.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("16 seconds")
      expect(yield* Fiber.join(chunks)).toEqual([EventStream.keepAlive, EventStream.keepAlive])
    }).pipe(Effect.provide(quietLog())))

  it.effect("open streams share one ticker, which goes on for the others when one closes", () =>
    Effect.gen(function*() {
      const first = yield* keepAlives(1)
      yield* TestClock.adjust("5 seconds")
      const second = yield* keepAlives(2)
      // the ticker started with the first stream: the second hears it 10 s after it opened, never more than 15 s
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.join(first)).toEqual([EventStream.keepAlive])
      expect(second.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("15 seconds")
      expect(yield* Fiber.join(second)).toEqual([EventStream.keepAlive, EventStream.keepAlive])
    }).pipe(Effect.provide(quietLog())))
})

describe("EventStream before the first event", () => {
  const timestamp = DateTime.makeUnsafe("2026-11-21T10:00:03.250Z")
  const submitted: EventLog.Entry = {
    seq: 1,
    event: new QuoteEvent.Submitted({ transactionId: "tx-1", timestamp, requestId: "quote" })
  }
  const completed: EventLog.Entry = {
    seq: 2,
    event: new QuoteEvent.Completed({
      transactionId: "tx-1",
      timestamp,
      quote: new Quote.CompletedQuote({
        transactionId: "tx-1",
        actualCardValue: BigDecimal.fromNumberUnsafe(100),
        exchangeCardValue: BigDecimal.fromNumberUnsafe(85)
      })
    })
  }

  /**
   * A log whose quote has no event when the stream opens: its cursors hand out the batches offered
   * to `batches` (`wake` offers `[]`); `afterSeqs` holds each cursor's `afterSeq`, `open` the
   * cursors not yet released, and `waiting` how many reads wait now.
   */
  const scripted = Effect.gen(function*() {
    const batches = yield* Queue.unbounded<ReadonlyArray<EventLog.Entry> | undefined>()
    const afterSeqs: Array<number> = []
    let open = 0
    let waiting = 0
    const next = Effect.suspend(() => {
      waiting++
      return Queue.take(batches)
    }).pipe(Effect.ensuring(Effect.sync(() => waiting--)))
    const log: EventLog.Service = {
      read: () => Effect.succeed([]),
      follow: () => Stream.never,
      cursor: (_, afterSeq) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            afterSeqs.push(afterSeq)
            open++
            return { poll: Effect.succeed([]), next, wake: () => Queue.offerUnsafe(batches, []) }
          }),
          () => Effect.sync(() => open--)
        )
    }
    /** Yields until a read waits (bounded): what follows happens while the stream waits. */
    const untilWaiting = Effect.gen(function*() {
      for (let step = 0; step < 100 && waiting === 0; step++) yield* Effect.yieldNow
      expect(waiting).toBe(1)
    })
    return { batches, log, afterSeqs, open: () => open, untilWaiting }
  })

  /** The response to a stream opened on the scripted log (after `lastEventId`, if given), in a fiber. */
  const opened = (log: EventLog.Service, draining = () => false, lastEventId?: number) =>
    EventStream.response("quote", Option.fromUndefinedOr(lastEventId), "key_a").pipe(
      Effect.provideService(EventLog.EventLog, log),
      Effect.provideService(Drain.Draining, { draining }),
      Effect.forkChild
    )

  /** A stream opened on a new scripted log, once it waits for the quote's first events. */
  const waiting = (draining?: () => boolean) =>
    Effect.gen(function*() {
      const script = yield* scripted
      const response = yield* opened(script.log, draining)
      yield* script.untilWaiting
      return { ...script, response }
    })

  const bodyText = (response: HttpServerResponse.HttpServerResponse) =>
    response.body._tag === "Stream"
      ? response.body.stream.pipe(Stream.decodeText, Stream.mkString)
      : Effect.succeed(response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : "")

  it.effect("it waits for them, and a quote that ends in that batch is one answer with its length", () =>
    Effect.gen(function*() {
      const { afterSeqs, batches, open, response } = yield* waiting()
      expect(response.pollUnsafe()).toBeUndefined()
      yield* Queue.offer(batches, [submitted, completed])
      const answer = yield* Fiber.join(response)
      expect(answer.body._tag).toBe("Uint8Array")
      expect(yield* bodyText(answer)).toBe(EventStream.message(submitted) + EventStream.message(completed))
      expect(afterSeqs).toEqual([0])
      expect(open()).toBe(0)
    }))

  it.effect("a first batch that does not end the quote starts the stream, which follows after it", () =>
    Effect.gen(function*() {
      const { afterSeqs, batches, open, response } = yield* waiting()
      expect(response.pollUnsafe()).toBeUndefined()
      yield* Queue.offer(batches, [submitted])
      const answer = yield* Fiber.join(response)
      expect(answer.body._tag).toBe("Stream")
      const text = yield* Effect.forkChild(bodyText(answer))
      yield* Queue.offer(batches, [completed])
      yield* Queue.offer(batches, undefined)
      expect(yield* Fiber.join(text)).toBe(EventStream.message(submitted) + EventStream.message(completed))
      // the stream's own cursor starts after the first batch: no repeat
      expect(afterSeqs).toEqual([0, submitted.seq])
      expect(open()).toBe(0)
    }))

  it.effect("the gateway's shutdown wakes the wait, which ends with an empty answer", () =>
    Effect.gen(function*() {
      let draining = false
      const { log, open, response } = yield* waiting(() => draining)
      draining = true
      KeepAlives.wakeAll(log)
      const answer = yield* Fiber.join(response)
      expect(answer.body._tag).toBe("Uint8Array")
      expect(yield* bodyText(answer)).toBe("")
      expect(open()).toBe(0)
    }))

  it.effect("a stream resumed after the terminal event is one empty answer, not a stream", () =>
    Effect.gen(function*() {
      const { afterSeqs, batches, log } = yield* scripted
      const response = yield* opened(log, undefined, completed.seq)
      // the cursor finds the quote ended: the end
      yield* Queue.offer(batches, undefined)
      const answer = yield* Fiber.join(response)
      expect(answer.body._tag).toBe("Uint8Array")
      expect(yield* bodyText(answer)).toBe("")
      expect(afterSeqs).toEqual([completed.seq])
    }))

  it.effect("a client that leaves while the stream waits releases its cursor", () =>
    Effect.gen(function*() {
      const { open, response } = yield* waiting()
      expect(open()).toBe(1)
      yield* Fiber.interrupt(response)
      expect(open()).toBe(0)
    }))

  it.effect("a log that fails while the stream waits ends it with an empty answer and a warning", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const answer = yield* EventStream.response("quote-SENTINEL", Option.none(), "key_a").pipe(
        Effect.provideService(EventLog.EventLog, {
          read: () => Effect.succeed([]),
          follow: () => Stream.never,
          cursor: () =>
            Effect.succeed({
              poll: Effect.succeed([]),
              next: Effect.fail(
                new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error("down") }) })
              ),
              wake: () => {}
            })
        }),
        Effect.provide(Logger.layer([Logger.make((options) => lines.push(Logger.formatJson.log(options)))]))
      )
      expect(answer.status).toBe(200)
      expect(yield* bodyText(answer)).toBe("")
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain("ended early")
    }))
})
