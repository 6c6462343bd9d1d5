import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { DurableQuotes } from "@gcx/workflow"
import {
  Cause,
  Context,
  Effect,
  Exit,
  Layer,
  Logger,
  Metric,
  Option,
  Redacted,
  References,
  Result,
  Schema,
  Scope
} from "effect"
import * as Path from "node:path"
import { ApiKeys, WebhookDelivery, WebhookSignature } from "../src/index.js"
import * as Attempts from "../src/internal/webhooks/attempt.js"
import * as Webhooks from "./utils/webhooks.js"

/** Card data planted in the quotes: none of it may reach a delivery, a row or a log. */
const pin = "918273"
const sentinels = [TestData.Cards.success, TestData.Cards.invalid, TestData.Cards.instant, pin]
const card = (cardNumber: string) => ({ cardNumber, pinNumber: pin, productLineId: TestData.defaultProductLineId })

const secret = "whsec_" + "Q".repeat(43)
const keyId = "key_webhooks"

/** Collects every log line (message, annotations, cause) as text. */
const capturingLogs = (lines: Array<string>) =>
  Logger.layer([
    Logger.make(({ cause, fiber, message }) => {
      lines.push(
        JSON.stringify({ message, annotations: fiber.getRef(References.CurrentLogAnnotations) }) + Cause.pretty(cause)
      )
    })
  ])

layer(Sandbox.layer({ logLevel: "None", timeScale: 0.01 }), { excludeTestServices: true })(
  "WebhookDelivery (embedded on SQLite, real HTTP)",
  (it) => {
    it.effect(
      "a receiver failing the first 3 deliveries, the gateway killed mid-delivery: one verified delivery acted on per event",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const directory = yield* Webhooks.tempDirectory
          const filename = Path.join(directory, "gcx.db")
          const requestIds = { completed: "whcompleted0001", failed: "whfailed0001", foreign: "whforeign0001" }
          const heldEvent = WebhookDelivery.eventId(requestIds.completed)

          // The receiver: per event id, 500 to the first 3 deliveries; then checks the signature and acts once
          // per event id (a repeat is answered 200, not acted on). The first acted delivery of `heldEvent` is
          // held unanswered: the gateway is stopped while it waits, and must send it again after its restart.
          const seen = new Map<string, number>()
          const acted = new Map<string, number>()
          const refused: Array<string> = []
          const receiver = yield* Webhooks.receiver((request) => {
            const eventId = String(request.headers["gcx-event-id"])
            const n = (seen.get(eventId) ?? 0) + 1
            seen.set(eventId, n)
            if (n <= 3) return 500
            const verified = WebhookSignature.verify({
              header: request.headers["gcx-signature"] as string,
              body: request.body,
              secret
            })
            if (Result.isFailure(verified)) {
              refused.push(verified.failure.reason)
              return 400
            }
            if (JSON.parse(request.body.toString("utf8")).id !== eventId) return 400
            if (acted.has(eventId)) return 200
            acted.set(eventId, 1)
            return eventId === heldEvent ? "hold" : 200
          })
          const keys = Webhooks.apiKeys(Webhooks.keyWith(keyId, [{ url: receiver.url, secret }]))
          const logs: Array<string> = []
          const gateway = Webhooks.gateway(server, filename, keys, { baseDelay: "50 millis" }).pipe(
            Layer.provide(capturingLogs(logs))
          )

          // First life: the quotes, two of them the gateway's; stopped while the held delivery waits.
          const first = yield* Scope.make()
          yield* Effect.gen(function*() {
            const quotes = yield* DurableQuotes.DurableQuotes
            yield* Webhooks.own(requestIds.completed, keyId)
            yield* Webhooks.own(requestIds.failed, keyId)
            yield* quotes.submit(card(TestData.Cards.success), { requestId: requestIds.completed })
            yield* quotes.submit(card(TestData.Cards.invalid), { requestId: requestIds.failed })
            yield* quotes.submit(card(TestData.Cards.instant), { requestId: requestIds.foreign })
            yield* Webhooks.eventually("the held delivery", () => acted.has(heldEvent))
          }).pipe(Effect.provide(Context.merge(yield* Layer.buildWithScope(gateway, first), Context.empty())))
          const heldAt = seen.get(heldEvent)!
          yield* Scope.close(first, Exit.void)

          // Second life, on the same file: the delivery resumes from the database.
          const second = yield* Scope.make()
          const context = yield* Layer.buildWithScope(gateway, second)
          const completedEvent = WebhookDelivery.eventId(requestIds.completed)
          const failedEvent = WebhookDelivery.eventId(requestIds.failed)
          yield* Webhooks.eventually("both events acted on and the held one sent again", () =>
            acted.has(failedEvent) && (seen.get(heldEvent) ?? 0) > heldAt)
          const results = yield* Effect.forEach([completedEvent, failedEvent], Webhooks.ended).pipe(
            Effect.provide(context)
          )
          const rows = yield* Effect.provide(Webhooks.dumpTables, context)
          yield* Scope.close(second, Exit.void)

          // Exactly one verified delivery acted on per event id; the held one was sent again and not acted on twice.
          expect(Object.fromEntries(acted)).toEqual({ [completedEvent]: 1, [failedEvent]: 1 })
          expect(seen.get(heldEvent)).toBeGreaterThanOrEqual(5)
          expect(seen.get(failedEvent)).toBeGreaterThanOrEqual(4)
          expect(seen.has(WebhookDelivery.eventId(requestIds.foreign))).toBe(false)
          expect(refused).toEqual([])
          expect(results.map((result) =>
            result.delivered
          )).toEqual([true, true])

          // Every attempt of an event sent the same bytes, with its id in Gcx-Event-Id, as JSON, signed.
          for (const eventId of [completedEvent, failedEvent]) {
            const sent = receiver.received.filter((request) => request.headers["gcx-event-id"] === eventId)
            expect(new Set(sent.map((request) => request.body.toString("base64"))).size).toBe(1)
            for (const request of sent) {
              expect(request.headers["content-type"]).toBe("application/json")
              const t = Number(/^t=(\d+),/.exec(String(request.headers["gcx-signature"]))?.[1])
              assert(Result.isSuccess(WebhookSignature.verify({
                header: String(request.headers["gcx-signature"]),
                body: request.body,
                secret,
                now: t
              })))
            }
          }
          const eventOf = (eventId: string) =>
            Schema.decodeUnknownSync(WebhookDelivery.Event)(
              JSON.parse(
                receiver.received.find((request) => request.headers["gcx-event-id"] === eventId)!.body.toString()
              )
            )
          const completed = eventOf(completedEvent)
          expect(completed.type).toBe("quote.completed")
          expect(completed.data).toMatchObject({ id: requestIds.completed, status: "completed", percentComplete: 100 })
          expect(completed.data.outcome?.actualCardValue).toBe("100.00")
          const failed = eventOf(failedEvent)
          expect(failed.type).toBe("quote.failed")
          expect(failed.data.error).toMatchObject({ code: "InvalidCard", group: "card" })
          expect(failed.data.links).toEqual({
            self: `/v1/quotes/${requestIds.failed}`,
            events: `/v1/quotes/${requestIds.failed}/events`
          })

          // No card data in any delivered byte, row or log; the webhook secret in no row and no log.
          const delivered = receiver.received.map((request) =>
            JSON.stringify(request.headers) + request.body.toString()
          )
            .join("\n")
          const logged = logs.join("\n")
          expect(logged).toContain("webhook delivery attempt failed")
          for (const sentinel of sentinels) {
            expect(delivered).not.toContain(sentinel)
            expect(rows).not.toContain(sentinel)
            expect(logged).not.toContain(sentinel)
          }
          expect(rows).not.toContain(secret)
          expect(logged).not.toContain(secret)
        }).pipe(Effect.scoped),
      90_000
    )

    it.effect(
      "an endpoint whose secret this node cannot open yet: its delivery waits, retried, and is made once it opens",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const directory = yield* Webhooks.tempDirectory
          const receiver = yield* Webhooks.receiver((request) =>
            Result.isSuccess(WebhookSignature.verify({
                header: String(request.headers["gcx-signature"]),
                body: request.body,
                secret
              }))
              ? 200
              : 400
          )
          const readable = Webhooks.keyWith(keyId, [{ url: receiver.url, secret }])
          // the first lookups cannot open the endpoint's secret (a node with mistaken data keys): left out
          let lookups = 0
          const keys = Layer.mock(ApiKeys.ApiKeys, {
            authenticate: () => Effect.fail(new ApiKeys.UnknownApiKey()),
            find: (id) =>
              Effect.sync(() => {
                if (id !== keyId) return Option.none()
                lookups++
                return Option.some(
                  lookups <= 3 ? { ...readable, webhooks: [], webhooksLeftOut: ["we_1"] } : readable
                )
              })
          })
          const gateway = Webhooks.gateway(server, Path.join(directory, "gcx.db"), keys, { baseDelay: "50 millis" })
          yield* Effect.gen(function*() {
            const quotes = yield* DurableQuotes.DurableQuotes
            yield* Webhooks.own("whleftout0001", keyId)
            yield* quotes.execute(card(TestData.Cards.instant), { requestId: "whleftout0001" })
            yield* Webhooks.eventually("the delivery", () => receiver.received.length > 0)
          }).pipe(Effect.provide(gateway, { local: true }))
          // the trigger's lookup and two attempts found it left out; the third attempt delivered it
          expect(lookups).toBeGreaterThanOrEqual(4)
          // counted by their own reason, not as the gateway's fault
          const unopened = (yield* Metric.snapshot).find((snapshot) =>
            snapshot.id === "gcx.gateway.webhooks.attempts.failed" && snapshot.attributes?.reason === "unopened"
          )
          expect(unopened?.state).toMatchObject({ count: expect.any(Number) })
          expect((unopened!.state as { readonly count: number }).count).toBeGreaterThanOrEqual(2)
          expect(receiver.received).toHaveLength(1)
          expect(receiver.received[0]!.headers["gcx-event-id"]).toBe(WebhookDelivery.eventId("whleftout0001"))
        }).pipe(Effect.scoped),
      60_000
    )

    it.effect(
      "a rotated secret: deliveries carry both signatures while the replaced secret overlaps, the new one's alone after",
      () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const directory = yield* Webhooks.tempDirectory
          const previous = "whsec_" + "P".repeat(43)
          const next = "whsec_" + "N".repeat(43)
          // each receiver acts on what verifies under the secret it knows, and counts the header's signatures
          const receiverOf = (known: string) => {
            const verified: Array<{ readonly ok: boolean; readonly signatures: number }> = []
            return Effect.map(
              Webhooks.receiver((request) => {
                const header = String(request.headers["gcx-signature"])
                const ok = Result.isSuccess(WebhookSignature.verify({ header, body: request.body, secret: known }))
                verified.push({ ok, signatures: header.split(",v1=").length - 1 })
                return ok ? 200 : 400
              }),
              (receiver) => ({ ...receiver, verified })
            )
          }
          // still on the replaced secret (within its overlap), and on the new one
          const stale = yield* receiverOf(previous)
          const moved = yield* receiverOf(next)
          // an endpoint whose overlap has ended: the replaced secret no longer signs
          const ended = yield* receiverOf(previous)
          const key = Webhooks.keyWith(keyId, [
            { url: stale.url, secret: next },
            { url: moved.url, secret: next },
            { url: ended.url, secret: next }
          ])
          const overlapping = { secret: Redacted.make(previous), expiresAt: Date.now() + 3_600_000 }
          const keyRotated = {
            ...key,
            webhooks: key.webhooks.map((endpoint, i) =>
              i < 2
                ? { ...endpoint, previous: overlapping }
                : { ...endpoint, previous: { ...overlapping, expiresAt: Date.now() - 1 } }
            )
          }
          const gateway = Webhooks.gateway(
            server,
            Path.join(directory, "gcx.db"),
            Webhooks.apiKeys(keyRotated),
            { baseDelay: "50 millis" }
          )
          yield* Effect.gen(function*() {
            const quotes = yield* DurableQuotes.DurableQuotes
            yield* Webhooks.own("whrotated0001", keyId)
            yield* quotes.execute(card(TestData.Cards.instant), { requestId: "whrotated0001" })
            yield* Webhooks.eventually("the deliveries", () =>
              stale.verified.length > 0 && moved.verified.length > 0 && ended.verified.length > 0)
          }).pipe(Effect.provide(gateway, { local: true }))
          expect(stale.verified[0]).toEqual({ ok: true, signatures: 2 })
          expect(moved.verified[0]).toEqual({ ok: true, signatures: 2 })
          expect(ended.verified[0]).toEqual({ ok: false, signatures: 1 })
        }).pipe(Effect.scoped),
      60_000
    )
  }
)

describe("the persisted attempt", () => {
  it("keeps its failures to the set older gateways decode when they replay a delivery", () => {
    // a value added here would make an older node's replay die (a rolling upgrade, a rollback): finer
    // reasons (`unopened`) go to the metrics and the log only
    expect(Attempts.Failure.literals).toEqual(["status", "redirect", "timeout", "unreachable", "gone", "internal"])
  })
})
