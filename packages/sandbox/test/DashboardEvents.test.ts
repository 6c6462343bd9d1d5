/**
 * Issue 20, dashboard streams: `GET /__sandbox/events` over real HTTP on
 * loopback. At most `maxDashboardStreams` (default 16) are open at once, a
 * stream beyond answers 503 and a closed one frees its place; the first
 * message is a full `snapshot`, later ones a `delta` of what changed, so an
 * idle tick costs the same (nothing, and a tiny keep-alive now and then)
 * whether 100 or 5,000 transactions are stored.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { ErrorBody, Routes } from "@gcx/core"
import { Sandbox, Store, TestData } from "@gcx/sandbox"
import { BigDecimal, Effect } from "effect"
import type { Scope } from "effect"
import { TestClock } from "effect/testing"
import { admin, call, exchangeHeaders, postQuote, quoteBody, tokenFor } from "./helpers.js"

/** One server-sent event, with the bytes it took on the wire. */
interface Event {
  readonly event: string
  readonly data: any
  readonly bytes: number
}

/** An open event stream: its answer, and its events one by one. */
interface Events {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  /** The next event, or `undefined` when none came within `millis` of real time. */
  readonly next: (millis: number) => Effect.Effect<Event | undefined>
  readonly close: Effect.Effect<void>
}

const encoder = new TextEncoder()

/** Opens `GET /__sandbox/events` with the admin key; the connection is closed with the scope. */
const openEvents = (server: Sandbox.Service): Effect.Effect<Events, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const controller = new AbortController()
      const response = await fetch(`${server.baseUrl}/__sandbox/events`, {
        headers: { "x-admin-key": server.adminKey },
        signal: controller.signal
      })
      const close = Effect.sync(() => controller.abort())
      if (!response.ok || response.body === null) {
        const text = await response.text()
        return {
          status: response.status,
          headers: response.headers,
          body: JSON.parse(text),
          next: () => Effect.succeed(undefined),
          close
        }
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      let pending: Promise<ReadableStreamReadResult<string>> | undefined
      const take = (): Event | undefined => {
        const end = buffer.indexOf("\n\n")
        if (end < 0) return undefined
        const text = buffer.slice(0, end + 2)
        buffer = buffer.slice(end + 2)
        const lines = text.split("\n")
        const event = lines.find((line) => line.startsWith("event: "))?.slice(7) ?? "message"
        const data = lines.filter((line) => line.startsWith("data: ")).map((line) => line.slice(6)).join("\n")
        return { event, data: data === "" ? undefined : JSON.parse(data), bytes: encoder.encode(text).length }
      }
      const next = (millis: number) =>
        Effect.promise(async (): Promise<Event | undefined> => {
          const deadline = Date.now() + millis
          for (let reads = 0; reads < 10_000; reads++) {
            const event = take()
            if (event !== undefined) return event
            const left = deadline - Date.now()
            if (left <= 0) return undefined
            pending ??= reader.read()
            let timer: NodeJS.Timeout | undefined
            const result = await Promise.race([
              pending,
              new Promise<"timeout">((resolve) => {
                timer = setTimeout(() => resolve("timeout"), left)
              })
            ])
            clearTimeout(timer)
            if (result === "timeout") return undefined
            pending = undefined
            if (result.done) return undefined
            buffer += result.value
          }
          return undefined
        })
      return { status: response.status, headers: response.headers, body: undefined, next, close }
    }),
    (events) => events.close
  )

/**
 * Opens a stream, retrying while the cap refuses it (a closed stream frees its
 * place once the server sees the close), and reads its first event, which must
 * be a full snapshot.
 */
const openSnapshot = (server: Sandbox.Service) =>
  Effect.gen(function*() {
    let events = yield* openEvents(server)
    for (let attempt = 0; attempt < 100 && events.status === 503; attempt++) {
      yield* events.close
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
      events = yield* openEvents(server)
    }
    expect(events.status).toBe(200)
    const first = yield* events.next(5_000)
    expect(first?.event).toBe("snapshot")
    return { events, snapshot: first! }
  })

/** POSTs `count` quotes of the card, eight at a time. */
const createQuotes = (server: Sandbox.Service, count: number, card: string = TestData.Cards.instant) =>
  Effect.gen(function*() {
    const token = yield* tokenFor(server)
    return yield* Effect.forEach(
      Array.from({ length: count }),
      () =>
        postQuote(server, exchangeHeaders(token), quoteBody(card)).pipe(
          Effect.filterOrElse((reply) => reply.status === 201, () => Effect.die(new Error("POST quote failed"))),
          Effect.map((reply) => reply.body.transactionId as string)
        ),
      { concurrency: 8 }
    )
  })

layer(Sandbox.layer({ timeScale: 0.01, logLevel: "None" }), { excludeTestServices: true })("stream cap", (it) => {
  it.effect("16 streams are served; the 17th answers 503 with Retry-After; closing one lets a new one in", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const open = yield* Effect.forEach(Array.from({ length: 16 }), () => openSnapshot(server), { concurrency: 4 })
      const refused = yield* openEvents(server)
      expect(refused.status).toBe(503)
      expect(refused.headers.get(Routes.Headers.retryAfter)).toMatch(/^\d+$/)
      expect(refused.body.ErrorCode).toBe(ErrorBody.ErrorCodes.serviceUnavailable)
      expect(refused.body.Message).toContain("16")
      // Closing connections frees their places (the server notices the close), and only theirs.
      yield* open[0]!.events.close
      yield* open[1]!.events.close
      yield* openSnapshot(server)
      yield* openSnapshot(server)
      expect((yield* openEvents(server)).status).toBe(503)
    }))

  it.effect("/openapi.json answers promptly while the cap's worth of streams are open and more are refused", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* createQuotes(server, 200)
      yield* Effect.forEach(Array.from({ length: 16 }), () => openSnapshot(server), { concurrency: 4 })
      const refused = yield* Effect.forEach(Array.from({ length: 100 }), () => openEvents(server), { concurrency: 20 })
      expect(refused.every((events) => events.status === 503)).toBe(true)
      const startedAt = performance.now()
      const document = yield* call(`${server.baseUrl}/openapi.json`)
      expect(document.status).toBe(200)
      expect(performance.now() - startedAt).toBeLessThan(1_000)
    }))
})

layer(Sandbox.layer({ maxDashboardStreams: 2, logLevel: "None" }), { excludeTestServices: true })(
  "maxDashboardStreams",
  (it) => {
    it.effect("sets the cap", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* openSnapshot(server)
        yield* openSnapshot(server)
        const refused = yield* openEvents(server)
        expect(refused.status).toBe(503)
        expect(refused.body.Message).toContain("at most 2")
      }))
  }
)

/** Moves the test clock on by one tick of the stream (500 ms) until an event comes, at most `ticks` times. */
const tickUntilEvent = (events: Events, ticks: number) =>
  Effect.gen(function*() {
    for (let tick = 1; tick <= ticks; tick++) {
      yield* TestClock.adjust("500 millis")
      const event = yield* events.next(100)
      if (event !== undefined) return { event, ticks: tick }
    }
    return yield* Effect.die(new Error(`no event within ${ticks} ticks`))
  })

/** Moves the test clock on tick by tick until a delta that satisfies `done` comes (at most 20 ticks). */
const tickUntilDelta = (events: Events, done: (data: any) => boolean) =>
  Effect.gen(function*() {
    const seen: Array<Event> = []
    for (let attempt = 0; attempt < 20; attempt++) {
      const { event } = yield* tickUntilEvent(events, 20)
      seen.push(event)
      expect(event.event).toBe("delta")
      if (done(event.data)) return { event, seen }
    }
    return yield* Effect.die(new Error("the delta never came"))
  })

// The sandbox runs on the test clock: each stream's tick comes when the test moves the clock.
layer(Sandbox.layer({ logLevel: "None" }))("deltas", (it) => {
  it.effect(
    "an idle tick costs the same with 100 or 5,000 stored transactions: nothing, then a tiny keep-alive",
    () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const measure = (stored: number) =>
          Effect.gen(function*() {
            yield* server.reset
            yield* createQuotes(server, stored)
            const { events, snapshot } = yield* openSnapshot(server)
            expect(snapshot.data.transactions).toHaveLength(100)
            expect(snapshot.data.journal).toHaveLength(100)
            const { event, ticks } = yield* tickUntilEvent(events, 40)
            yield* events.close
            // The first message after the snapshot is the keep-alive: the time only, after ten idle ticks.
            expect(event.event).toBe("delta")
            expect(Object.keys(event.data)).toEqual(["time"])
            expect(ticks).toBeGreaterThanOrEqual(10)
            return event.bytes
          })
        const few = yield* measure(100)
        const many = yield* measure(5_000)
        expect(few).toBeLessThan(100)
        expect(many).toBe(few)
      }),
    { timeout: 120_000 }
  )

  it.effect("a change shows up in the next delta, and only the change", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      yield* createQuotes(server, 150)
      const { events, snapshot } = yield* openSnapshot(server)
      const newest = snapshot.data.transactions[0].transactionId

      // a new pending transaction: it, the new order of ids, its journal line and the counts
      const [created] = yield* createQuotes(server, 1, TestData.Cards.success)
      const { event: added } = yield* tickUntilDelta(events, (data) => data.transactions !== undefined)
      expect(added.data.transactions).toHaveLength(1)
      expect(added.data.transactions[0]).toMatchObject({ transactionId: created, state: "pending" })
      expect(added.data.transactionIds).toHaveLength(100)
      expect(added.data.transactionIds.slice(0, 2)).toEqual([created, newest])
      expect(added.data.journal.map((entry: any) => entry.route)).toContain("createQuote")
      expect(added.data.requests.createQuote).toBe(snapshot.data.requests.createQuote + 1)
      expect(added.data.faults).toBeUndefined()
      expect(added.data.partners).toBeUndefined()

      // its progress moves with the clock: only it is sent again, without the ids
      const { event: moved } = yield* tickUntilDelta(events, (data) => data.transactions !== undefined)
      expect(moved.data.transactions.map((transaction: any) => transaction.transactionId)).toEqual([created])
      expect(moved.data.transactions[0].percentComplete).toBeGreaterThan(added.data.transactions[0].percentComplete)
      expect(moved.data.transactionIds).toBeUndefined()
      const { event: completed } = yield* tickUntilDelta(
        events,
        (data) => data.transactions?.[0]?.state === "completed"
      )
      expect(completed.data.transactions[0]).toMatchObject({ transactionId: created, percentComplete: 100 })

      // a partner switched off, a fault rule set
      yield* server.setPartnerEnabled(TestData.partner.clientId, false)
      const { event: partners } = yield* tickUntilDelta(events, (data) => data.partners !== undefined)
      expect(partners.data.partners).toContainEqual({ clientId: TestData.partner.clientId, enabled: false })
      expect(partners.data.transactions).toBeUndefined()
      yield* server.setFaults([{ route: "heartbeat", kind: "status500" }])
      const { event: faults } = yield* tickUntilDelta(events, (data) => data.faults !== undefined)
      expect(faults.data.faults).toEqual([{ route: "heartbeat", kind: "status500" }])

      // a reset: a new snapshot, empty
      expect((yield* admin(server, "POST", "/reset")).status).toBe(204)
      const { event: fresh } = yield* tickUntilEvent(events, 20)
      expect(fresh.event).toBe("snapshot")
      expect(fresh.data.transactions).toEqual([])
      expect(fresh.data.faults).toEqual([])
    }), { timeout: 60_000 })
})

/** A transaction made for the test: done at once, or running for a minute when its id starts with `slow`. */
const stored = (id: string, createdAt: number): Store.Transaction => ({
  id,
  clientId: TestData.partner.clientId,
  creatorId: 1,
  requestId: `request-${id}`,
  previousAttempts: 0,
  createdAt,
  maskedCardNumber: "************0019",
  productLineId: TestData.defaultProductLineId,
  plan: {
    scenario: "test",
    durationMillis: id.startsWith("slow") ? 60_000 : 0,
    result: {
      _tag: "Quoted",
      actualCardValue: BigDecimal.fromStringUnsafe("1"),
      exchangeCardValue: BigDecimal.fromStringUnsafe("1")
    }
  }
})

describe("store", () => {
  it.effect("latest gives the newest transactions first, evicted ones left out; version moves on each change", () =>
    Effect.gen(function*() {
      const store = yield* Store.make({ maxTransactions: 5 })
      const v0 = yield* store.version
      for (let index = 0; index < 4; index++) yield* store.create(stored(`slow-${index}`, index))
      const v1 = yield* store.version
      expect(v1).not.toBe(v0)
      yield* store.create(stored("done-4", 4))
      // past the cap, the oldest finished one (the newest here) goes first
      for (let index = 5; index < 40; index++) yield* store.create(stored(`done-${index}`, index))
      expect((yield* store.latest(3)).map((transaction) => transaction.id)).toEqual(["done-39", "slow-3", "slow-2"])
      expect((yield* store.latest(10)).map((transaction) => transaction.id)).toEqual([
        "done-39",
        "slow-3",
        "slow-2",
        "slow-1",
        "slow-0"
      ])
      expect(yield* store.version).not.toBe(v1)
      const v2 = yield* store.version
      expect(yield* store.version).toBe(v2)
      yield* store.reset
      expect(yield* store.latest(10)).toEqual([])
      expect(yield* store.version).not.toBe(v2)
    }))
})
