/**
 * What a runner relays of its quotes' events (`EventRelay`): no card, no terminal event, batches under
 * PostgreSQL's payload limit that decode back; and the shards it logs (`ShardLog.ranges`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Errors, QuoteEvent } from "@gcx/core"
import { EventRelay, ShardLog } from "@gcx/workflow"
import { DateTime, Schema } from "effect"

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
