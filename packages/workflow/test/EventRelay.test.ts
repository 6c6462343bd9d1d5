/**
 * What a runner relays of its quotes' events (`EventRelay`): no card, no terminal event, batches under
 * PostgreSQL's payload limit that decode back, heard again after the database was lost; and the
 * shards it logs (`ShardLog.ranges`).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it, layer } from "@effect/vitest"
import { Errors, QuoteEvent } from "@gcx/core"
import { QuoteEvents } from "@gcx/poller"
import { EventRelay, Outcomes, ShardLog } from "@gcx/workflow"
import { DateTime, Effect, Layer, Logger, Schema, Stream } from "effect"
import * as TestPg from "./utils/postgres.js"

const timestamp = DateTime.makeUnsafe(Date.UTC(2026, 10, 25))

const submitted = (transactionId: string) =>
  new QuoteEvent.Submitted({ transactionId, timestamp, requestId: `r-${transactionId}`, card: "****0001" })

describe("EventRelay", () => {
  it("relays Submitted without its card, progress as it is, and no terminal event", () => {
    const relayed = EventRelay.relayed(submitted("T1"))
    expect(relayed?._tag).toBe("Submitted")
    expect(relayed).not.toHaveProperty("card")
    expect(JSON.stringify(QuoteEvent.encode(relayed!))).not.toContain("0001")
    const progress = new QuoteEvent.Progress({ transactionId: "T1", timestamp, percentComplete: 50, steps: [] })
    expect(EventRelay.relayed(progress)).toBe(progress)
    const failed = new QuoteEvent.Failed({
      transactionId: "T1",
      timestamp,
      error: Errors.unexpectedResponse({ transactionId: "T1" }, "the test's failure")
    })
    expect(EventRelay.relayed(failed)).toBeUndefined()
  })

  it("packs events into payloads under the limit, each decoding back to its events, in order", () => {
    const events = Array.from({ length: 400 }, (_, i) => EventRelay.relayed(submitted(`T${i}`))!)
    const payloads = EventRelay.payloads(events)
    expect(payloads.length).toBeGreaterThan(1)
    const decode = Schema.decodeUnknownSync(Schema.fromJsonString(EventRelay.Events))
    const back = payloads.flatMap((payload) => {
      expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(EventRelay.maxPayloadBytes)
      return decode(payload).events
    })
    expect(back.map((event) => event.transactionId)).toEqual(events.map((event) => event.transactionId))
  })
})

describe("ShardLog", () => {
  it("writes shards as ranges per group", () => {
    const shards = [3, 1, 2, 7, 9, 10].map((id) => ({ group: "default", id }))
    expect(ShardLog.ranges([...shards, { group: "other", id: 4 }])).toBe("default:1-3,7,9-10 other:4")
  })
})

layer(Layer.provideMerge(TestPg.layerClient, TestPg.layer({ ownServer: true })), {
  excludeTestServices: true,
  timeout: 90_000
})("EventRelay on PostgreSQL", (it) => {
  it.effect("a client-only node's relay listens again after the database was lost, and hears the runners again", () =>
    Effect.gen(function*() {
      const db = yield* TestPg.PgTestDatabase
      const pg = yield* PgClient.PgClient
      const heard: Array<string> = []
      const bus = yield* QuoteEvents.QuoteEvents
      const subscription = yield* bus.subscribe
      yield* Effect.forkScoped(
        Stream.runForEach(subscription, (event) => Effect.sync(() => heard.push(event.transactionId)))
      )
      yield* Layer.build(EventRelay.layerSubscriber)
      const relay = (transactionId: string) =>
        Effect.forEach(
          EventRelay.payloads([EventRelay.relayed(submitted(transactionId))!]),
          (payload) => pg.notify(Outcomes.channel, payload)
        )
      const heardOf = (transactionId: string) =>
        Effect.gen(function*() {
          for (let i = 0; i < 100 && !heard.includes(transactionId); i++) {
            yield* Effect.ignore(relay(transactionId))
            yield* Effect.sleep("100 millis")
          }
          return heard.includes(transactionId)
        })
      expect(yield* heardOf("before")).toBe(true)
      yield* db.stop
      yield* Effect.sleep("1 second")
      yield* db.start
      // heard again once the relay listens again (it retries every 2 s at most)
      expect(yield* heardOf("after")).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(QuoteEvents.layer()), Effect.provide(Logger.layer([]))))
})
