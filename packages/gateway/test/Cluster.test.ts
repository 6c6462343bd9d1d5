/**
 * Scale-out over PostgreSQL: a throwaway PostgreSQL, a runner in this
 * process with the webhook deliveries (as `gcx runner` wires it), and two
 * client-only gateways (as `gcx serve` builds them with `GCX_DATABASE_URL`:
 * `DurableQuotes.layer()` over a client-only node, the real `ApiKeys`,
 * `RateLimit` and `EventLog`), each on its own loopback port, against a
 * sandbox in this process. The caller's key is created with `ApiKeys.create`
 * (another instance, as `gcx serve keys create` would), with one webhook
 * endpoint: a real HTTP receiver that verifies `Gcx-Signature` and acts once
 * per event id. Everything is asked over real HTTP.
 */
import { expect, layer } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { CardCipher, ClusterSecurity, DurableQuotes, EventLog, Runner } from "@gcx/workflow"
import { Effect, Fiber, Layer, Logger, Redacted, References, Result } from "effect"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import { FetchHttpClient, HttpServer } from "effect/http"
import { clientOptions } from "../../workflow/test/fixtures.js"
import * as TestPg from "../../workflow/test/utils/postgres.js"
import { ApiKeys, Gateway, GatewayQuotes, RateLimit, WebhookDelivery, WebhookSignature } from "../src/index.js"
import { type Answer, call, cardBody, dataKey, expectWholeStream, messagesOf } from "./utils/gateway.js"
import * as Webhooks from "./utils/webhooks.js"

/** The log lines of every node, each its message and annotations as JSON, for the scan for card data. */
const logs: Array<string> = []

/**
 * What every node of the test is given: the data key, an exchange client of
 * the sandbox, and a logger that keeps each line in `logs`.
 */
const nodeServices = (server: Sandbox.Service) =>
  Layer.mergeAll(
    CardCipher.layer(dataKey),
    ExchangeClient.layerWith(clientOptions(server)).pipe(Layer.provide(FetchHttpClient.layer)),
    Logger.layer([
      Logger.make(({ fiber, message }) => {
        logs.push(JSON.stringify({ message, annotations: fiber.getRef(References.CurrentLogAnnotations) }))
      })
    ])
  )

/** A runner in this process on a free port, with the webhook deliveries, as `gcx runner` runs it. */
const runnerNode = (db: TestPg.TestDatabase, server: Sandbox.Service) =>
  Effect.flatMap(TestPg.freePort, (port) =>
    Layer.build(
      Runner.layerQuotes(
        {
          databaseUrl: db.url,
          runnerAddress: RunnerAddress.make("127.0.0.1", port),
          security: ClusterSecurity.insecureLoopback
        },
        undefined,
        WebhookDelivery.layerNode()
      ).pipe(Layer.provide(nodeServices(server)), Layer.orDie)
    ))

/** A client-only gateway on a free loopback port, as `gcx serve` builds it with `GCX_DATABASE_URL`; its URL. */
const gatewayNode = (db: TestPg.TestDatabase, server: Sandbox.Service) =>
  Effect.gen(function*() {
    const deployment = DurableQuotes.layer().pipe(
      Layer.provideMerge(Runner.layerClient({ databaseUrl: db.url, security: ClusterSecurity.insecureLoopback }))
    )
    const context = yield* Layer.build(
      Gateway.layer({ port: 0 }).pipe(
        Layer.provide(GatewayQuotes.layer(dataKey)),
        Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, RateLimit.layer, EventLog.layer())),
        Layer.provideMerge(deployment),
        Layer.provide(nodeServices(server)),
        Layer.fresh,
        Layer.orDie
      )
    )
    const address = (yield* Effect.provide(HttpServer.HttpServer, context)).address as { readonly port: number }
    return `http://127.0.0.1:${address.port}`
  })

/** `/readyz` of a gateway, asked every 50 ms until it is 200 (at most 10 s). */
const ready = (url: string) =>
  Effect.gen(function*() {
    let answer: Answer = yield* call(`${url}/readyz`)
    for (let attempt = 0; attempt < 200 && answer.status !== 200; attempt++) {
      yield* Effect.sleep("50 millis")
      answer = yield* call(`${url}/readyz`)
    }
    return answer
  })

/** The quotes of the test: a card, and how its quote ends (the slow one lasts 1.5 s in the sandbox). */
const quotes = [
  { idempotencyKey: "order-0", cardNumber: TestData.Cards.slow, status: "completed", terminal: "Completed" },
  { idempotencyKey: "order-1", cardNumber: TestData.Cards.success, status: "completed", terminal: "Completed" },
  { idempotencyKey: "order-2", cardNumber: TestData.Cards.instant, status: "completed", terminal: "Completed" },
  { idempotencyKey: "order-3", cardNumber: TestData.Cards.zeroBalance, status: "failed", terminal: "Failed" }
] as const

/** A quiet sandbox on a free port, its quotes 20 times faster than the service's (the slow one: 1.5 s). */
const sandbox = Sandbox.layer({ logLevel: "None", timeScale: 0.05 })

layer(Layer.merge(sandbox, TestPg.layer()), { excludeTestServices: true, timeout: 120_000 })(
  "two client-only gateways on the runners of one PostgreSQL",
  (it) => {
    it.effect(
      "a quote POSTed on one is the same on the other, followed there to its end; one webhook per event",
      () =>
        Effect.gen(function*() {
          const db = yield* TestPg.PgTestDatabase
          const server = yield* Sandbox.SandboxServer

          // The receiver: every delivery recorded; the signature checked; acted on once per event id.
          let secret = ""
          const verified: Array<string> = []
          const refused: Array<string> = []
          const acted = new Map<string, Webhooks.Received>()
          const receiver = yield* Webhooks.receiver((request) => {
            const eventId = String(request.headers["gcx-event-id"])
            const checked = WebhookSignature.verify({
              header: request.headers["gcx-signature"] as string | undefined,
              body: request.body,
              secret
            })
            if (Result.isFailure(checked)) {
              refused.push(checked.failure.reason)
              return 400
            }
            verified.push(eventId)
            if (!acted.has(eventId)) acted.set(eventId, request)
            return 200
          })

          // The key, created by another process's store, as `gcx serve keys create --webhook <url>` does.
          const created = yield* Effect.provide(
            Effect.flatMap(
              ApiKeys.make(),
              (keys) => keys.create({ name: "cluster", ratePerSecond: 100, burst: 100, webhooks: [receiver.url] })
            ),
            Layer.merge(TestPg.layerClient, CardCipher.layer(dataKey)),
            { local: true }
          ).pipe(Effect.orDie)
          secret = Redacted.value(created.apiKey.webhooks[0]!.secret)
          const key = Redacted.value(created.key)
          const post = (gateway: string, idempotencyKey: string, body: unknown) =>
            call(`${gateway}/v1/quotes`, { method: "POST", key, idempotencyKey, body })

          yield* runnerNode(db, server)
          const [one, two] = [yield* gatewayNode(db, server), yield* gatewayNode(db, server)]
          expect(one).not.toBe(two)

          /** The quotes' ids, and the type of the webhook event each must get. */
          const expected = new Map<string, string>()
          for (const quote of quotes) {
            const body = cardBody(quote.cardNumber)
            const first = yield* post(one, quote.idempotencyKey, body)
            expect(first.status).toBe(202)
            const id: string = first.json.id
            expected.set(WebhookDelivery.eventId(id), `quote.${quote.status}`)
            // followed on gateway 2 from the start, while the runner works on it
            const events = yield* Effect.forkChild(call(`${two}/v1/quotes/${id}/events`, { key }))
            const again = yield* post(two, quote.idempotencyKey, body)
            expect(again.status).toBe(202)
            expect(again.json).toEqual(first.json)
            // the slow quote is still running: the stream on gateway 2 is followed live, woken by the runner's NOTIFY
            if (quote.cardNumber === TestData.Cards.slow) {
              expect((yield* call(`${two}/v1/quotes/${id}`, { key })).json.status).toBe("pending")
            }

            const stream = yield* Effect.timeout(Fiber.join(events), "30 seconds")
            expect(stream.status).toBe(200)
            const messages = messagesOf(stream.text)
            expectWholeStream(messages, quote.terminal)

            const view = yield* call(`${two}/v1/quotes/${id}`, { key })
            expect(view.status).toBe(200)
            expect(view.json).toMatchObject(
              quote.status === "completed"
                ? { id, status: "completed", percentComplete: 100 }
                : { id, status: "failed", error: { code: "CardValueOutOfRange", group: "card" } }
            )
            const transactions = (yield* server.transactions).filter((transaction) => transaction.requestId === id)
            expect(transactions).toHaveLength(1)
            if (quote.status === "completed") {
              expect(view.json.outcome.transactionId).toBe(transactions[0]!.transactionId)
            }
            for (const answer of [first, again, stream, view]) expect(answer.text).not.toContain(quote.cardNumber)
          }

          // the same Idempotency-Key with another card, on either gateway: 409, never the other card's quote
          const reused = yield* post(two, quotes[0].idempotencyKey, cardBody(TestData.Cards.invalid))
          expect(reused.status).toBe(409)
          expect(reused.json.error.code).toBe("idempotency_key_reused")
          expect(yield* server.transactions).toHaveLength(quotes.length)

          // one verified delivery per event id, of the event it names
          yield* Webhooks.eventually("the webhooks", () => acted.size === quotes.length)
          expect([...acted.keys()].sort()).toEqual([...expected.keys()].sort())
          for (const [eventId, request] of acted) {
            const event = JSON.parse(request.body.toString("utf8"))
            expect(event).toMatchObject({ id: eventId, type: expected.get(eventId), data: { percentComplete: 100 } })
            expect(eventId).toBe(WebhookDelivery.eventId(event.data.id))
            expect(request.headers["content-type"]).toContain("application/json")
            for (const quote of quotes) expect(request.body.toString("utf8")).not.toContain(quote.cardNumber)
          }

          for (const url of [one, two]) {
            const answer = yield* ready(url)
            expect(answer.status).toBe(200)
            expect(answer.json).toEqual({ status: "ready", database: "ok", service: "ok" })
          }
          expect(refused).toEqual([])
          expect(logs.some((line) => line.includes("\"route\":\"submit\""))).toBe(true)
          for (const line of logs) for (const quote of quotes) expect(line).not.toContain(quote.cardNumber)
          // delivered once each: no event told twice across the nodes
          expect(verified.sort()).toEqual([...acted.keys()].sort())
        }).pipe(Effect.scoped),
      60_000
    )
  }
)
