import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { Errors, Quote } from "@gcx/core"
import { Embedded, QuoteWorkflow } from "@gcx/workflow"
import { BigDecimal, Effect, Exit, Layer, Logger } from "effect"
import { WorkflowEngine } from "effect/workflow"
import * as Path from "node:path"
import { WebhookDelivery } from "../src/index.js"
import * as Webhooks from "./utils/webhooks.js"

const secret = "whsec_" + "T".repeat(43)

/** The deliveries on the in-memory engine (the live clock), over SQLite in a temporary file, for the key given. */
const deliveries = (directory: string, key: ReturnType<typeof Webhooks.keyWith>, options: WebhookDelivery.Options) =>
  WebhookDelivery.layer(options).pipe(
    Layer.provide(Webhooks.apiKeys(key)),
    Layer.provide(NodeHttpClient.layerUndici),
    Layer.provideMerge(WorkflowEngine.layerMemory),
    Layer.provideMerge(Embedded.layerSqlite(Path.join(directory, "gcx.db"))),
    Layer.provide(Logger.layer([])),
    Layer.orDie
  )

const completed = (requestId: string): QuoteWorkflow.Outcome => {
  const quote = new Quote.CompletedQuote({
    transactionId: "tx-1",
    actualCardValue: BigDecimal.fromNumberUnsafe(100),
    exchangeCardValue: BigDecimal.fromNumberUnsafe(85)
  })
  return { requestId, executionId: "e1", transactionId: "tx-1", exit: Exit.succeed(quote) }
}

describe("the webhook trigger (QuoteOutcomes)", () => {
  it.live("an outcome told twice starts one delivery; a quote the gateway does not own, none", () =>
    Effect.gen(function*() {
      const directory = yield* Webhooks.tempDirectory
      const receiver = yield* Webhooks.receiver(() => 204)
      const key = Webhooks.keyWith("key_trigger", [{ url: receiver.url, secret }])
      yield* Effect.gen(function*() {
        yield* Webhooks.own("trigger0001", key.id)
        const told = yield* QuoteWorkflow.QuoteOutcomes
        yield* told.publish(completed("trigger0001"))
        yield* told.publish(completed("trigger0001")) // e.g. a runner that died after the outcome replays it
        yield* told.publish(completed("notmine0001"))
        expect(yield* Webhooks.ended("evt_trigger0001")).toEqual({ delivered: true, attempts: 1 })
      }).pipe(Effect.provide(deliveries(directory, key, {})))
      expect(receiver.received.map((request) => request.headers["gcx-event-id"])).toEqual(["evt_trigger0001"])
      const event = JSON.parse(receiver.received[0]!.body.toString())
      expect(event).toMatchObject({
        id: "evt_trigger0001",
        type: "quote.completed",
        data: {
          id: "trigger0001",
          status: "completed",
          outcome: { actualCardValue: "100.00", exchangeCardValue: "85.00" }
        }
      })
    }).pipe(Effect.scoped))

  it.live("a failed quote's event carries its error code, group and customer message, never the service's message", () =>
    Effect.sync(() => {
      const error = new Errors.InvalidCard({
        message: "internal detail 6006000000000035",
        userMessage: "Card not valid"
      })
      const event = WebhookDelivery.eventOf({
        requestId: "r1",
        executionId: "e",
        transactionId: undefined,
        exit: Exit.fail(error)
      }, 5)
      expect(event).toEqual({
        id: "evt_r1",
        type: "quote.failed",
        created: 5,
        data: {
          id: "r1",
          status: "failed",
          percentComplete: 100,
          steps: [],
          error: { code: "InvalidCard", group: "card", userMessage: "Card not valid" },
          links: { self: "/v1/quotes/r1", events: "/v1/quotes/r1/events" }
        }
      })
    }))

  it.live("a redirect is never followed; an endpoint removed from its key is given up at once", () =>
    Effect.gen(function*() {
      const directory = yield* Webhooks.tempDirectory
      const elsewhere = yield* Webhooks.receiver(() => 200)
      const redirecting = yield* Webhooks.receiver(() => 307)
      redirecting.server.prependListener("request", (_, response) => response.setHeader("location", elsewhere.url))
      const key = Webhooks.keyWith("key_redirect", [{ url: redirecting.url, secret }])
      const options: WebhookDelivery.Options = { baseDelay: "20 millis", maxAge: "300 millis" }
      const result = yield* Effect.gen(function*() {
        yield* Webhooks.own("redirect0001", key.id)
        yield* (yield* QuoteWorkflow.QuoteOutcomes).publish(completed("redirect0001"))
        return yield* Webhooks.ended("evt_redirect0001")
      }).pipe(Effect.provide(deliveries(directory, key, options)))
      expect(result.delivered).toBe(false)
      expect(result.attempts).toBe(redirecting.received.length)
      expect(redirecting.received.length).toBeGreaterThan(1)
      expect(elsewhere.received).toEqual([])

      // The key no longer has the endpoint: one attempt finds it gone, and the delivery ends there.
      const gone = { ...key, webhooks: [] }
      const told = yield* Effect.gen(function*() {
        yield* Webhooks.own("gone0001", key.id)
        // started while the endpoint existed: the same delivery, its key changed since
        yield* WebhookDelivery.DeliveryWorkflow.execute({
          eventId: "evt_gone0001",
          endpointId: "we_1",
          keyId: key.id,
          body: "{}"
        }, { discard: true })
        return yield* Webhooks.ended("evt_gone0001")
      }).pipe(Effect.provide(deliveries(yield* Webhooks.tempDirectory, gone, options)))
      expect(told).toEqual({ delivered: false, attempts: 1 })
    }).pipe(Effect.scoped))
})
