/**
 * The gateway over real HTTP with its real stores, as `gcx serve` runs them:
 * `ApiKeys.layer` (keys created with `create`, hashed in SQLite),
 * `RateLimit.layer` (a token bucket per key) and `EventLog.layer()` (the
 * events the embedded runner records), over durable quotes embedded on
 * SQLite in a temporary file and a real sandbox. Card data is planted in
 * every quote and looked for in every answer and every log line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Capture, TestData } from "@gcx/sandbox"
import { Effect, Redacted } from "effect"
import * as Crypto from "node:crypto"
import {
  type Answer,
  awaitDone,
  call,
  cardBody,
  expectWholeStream,
  messagesOf,
  type Running,
  sandbox,
  start,
  type StartOptions
} from "./utils/gateway.js"

/** The card data of the tests' quotes: a card number and a PIN that no answer or log line may show. */
const card = TestData.Cards.success
const pin = `PIN-SENTINEL-${Crypto.randomBytes(4).toString("hex")}`

const post = (gateway: Running, key: string, idempotencyKey: string) =>
  call(`${gateway.url}/v1/quotes`, { method: "POST", key, idempotencyKey, body: cardBody(card, pin) })

/** Runs a test against a fresh gateway with the real stores (and a fresh sandbox). */
const withGateway = <A, E>(test: (gateway: Running) => Effect.Effect<A, E>, options: StartOptions = {}) =>
  Effect.gen(function*() {
    return yield* test(yield* start({ stores: "real", ...options }))
  }).pipe(Effect.scoped, Effect.provide(sandbox))

/** Neither the card number nor the PIN in any answer (body or header) or log line of the gateway. */
const expectNoCardData = (gateway: Running, answers: ReadonlyArray<Answer>) => {
  expect(gateway.logs.length).toBeGreaterThan(0)
  for (const text of [...answers.map((a) => `${a.text}\n${JSON.stringify([...a.headers])}`), ...gateway.logs]) {
    expect(text).not.toContain(card)
    expect(text).not.toContain(pin)
  }
}

describe("the gateway with its real stores (ApiKeys, RateLimit, EventLog on SQLite)", () => {
  it.live("a key of 0.2/s with a burst of 2: two POSTs accepted, the third 429 Retry-After 5, no third quote", () =>
    withGateway((gateway) =>
      Effect.gen(function*() {
        const created = yield* gateway.keys.create({ name: "slow caller", ratePerSecond: 0.2, burst: 2 })
        const key = Redacted.value(created.key)
        const started = Date.now()
        const answers = [
          yield* post(gateway, key, "rate-1"),
          yield* post(gateway, key, "rate-2"),
          yield* post(gateway, key, "rate-3")
        ]
        expect(answers.map((answer) => answer.status)).toEqual([202, 202, 429])
        const limited = answers[2]!
        // 0.2 token a second: within 1 s of the first POST (the usual case), the next token is 5 s away; on a
        // machine so loaded that the three POSTs took longer, it is as much nearer as they took
        const elapsed = (Date.now() - started) / 1000
        const retryAfter = Number(limited.headers.get("retry-after"))
        expect(retryAfter).toBeLessThanOrEqual(5)
        expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, Math.ceil(5 - elapsed)))
        expect(limited.json).toEqual({ error: { code: "rate_limited", message: expect.any(String) } })
        // the two accepted quotes reach the service; the third was refused before any I/O
        const accepted = [answers[0]!.json.id, answers[1]!.json.id]
        for (let i = 0; i < 200 && (yield* gateway.sandbox.transactions).length < 2; i++) {
          yield* Effect.sleep("20 millis")
        }
        expect((yield* gateway.sandbox.transactions).map((transaction) => transaction.requestId).sort()).toEqual(
          accepted.sort()
        )
        expect(yield* gateway.count("gcx_gateway_quotes")).toBe(2)
        expect(yield* gateway.count("gcx_request_ids")).toBe(2)
        expectNoCardData(gateway, answers)
      })
    ))

  it.live("401 with WWW-Authenticate: Bearer for a revoked key, an unknown one, and a malformed one (no query)", () => {
    const capture = Capture.make()
    const spans = capture.spans
    return Effect.gen(function*() {
      /** A request in its own trace (W3C `traceparent`), and the names of the database spans of that trace. */
      const traced = (gateway: Running, key: string) =>
        Effect.gen(function*() {
          const traceId = Crypto.randomBytes(16).toString("hex")
          const answer = yield* call(`${gateway.url}/v1/quotes/${"ab".repeat(16)}`, {
            key,
            headers: { traceparent: `00-${traceId}-${Crypto.randomBytes(8).toString("hex")}-01` }
          })
          const trace = spans.filter((span) => span.traceId === traceId)
          return { answer, trace, queries: trace.filter((span) => span.attributes.has("db.system.name")) }
        })
      yield* withGateway((gateway) =>
        Effect.gen(function*() {
          const used = yield* gateway.keys.create({ name: "used, then revoked" })
          const never = yield* gateway.keys.create({ name: "revoked before any use" })
          const accepted = yield* post(gateway, Redacted.value(used.key), "before-revoke")
          expect(accepted.status).toBe(202)
          expect(yield* gateway.keys.revoke(used.apiKey.id)).toBe("revoked")
          expect(yield* gateway.keys.revoke(never.apiKey.id)).toBe("revoked")

          const revoked = [
            yield* post(gateway, Redacted.value(used.key), "after-revoke"),
            yield* call(`${gateway.url}/v1/quotes/${accepted.json.id}`, { key: Redacted.value(used.key) }),
            yield* post(gateway, Redacted.value(never.key), "never")
          ]
          const unknown = yield* traced(gateway, `gcx_sk_${"Z".repeat(43)}`)
          const malformed = yield* traced(gateway, "gcx_sk_not-a-key")
          const answers = [...revoked, unknown.answer, malformed.answer]
          for (const answer of answers) {
            expect(answer.status).toBe(401)
            expect(answer.headers.get("www-authenticate")).toBe("Bearer")
            expect(answer.json).toEqual({
              error: { code: "unauthorized", message: "the API key is missing, unknown or revoked" }
            })
          }
          // the database spans are seen: a well-formed unknown key is looked up; a malformed one never is
          expect(unknown.queries.length).toBeGreaterThan(0)
          expect(malformed.trace.length).toBeGreaterThan(0)
          expect(malformed.queries.map((span) => span.name)).toEqual([])
          // only the POST before the revocation reached the service
          expect((yield* gateway.sandbox.transactions).map((transaction) => transaction.requestId)).toEqual(
            expect.arrayContaining([accepted.json.id])
          )
          expect(yield* gateway.count("gcx_gateway_quotes")).toBe(1)
          expectNoCardData(gateway, [accepted, ...answers])
        })
      ).pipe(Effect.provide(Capture.spans(capture)))
    })
  })

  it.live("events from the real log: a bad Last-Event-ID is 400; a good one resumes after it to the terminal event", () =>
    withGateway((gateway) =>
      Effect.gen(function*() {
        const key = Redacted.value((yield* gateway.keys.create({ name: "events" })).key)
        const posted = yield* post(gateway, key, "events-1")
        expect(posted.status).toBe(202)
        const id: string = posted.json.id
        const events = `${gateway.url}/v1/quotes/${id}/events`
        const bad = yield* Effect.forEach(
          ["x", "-1", "1.5"],
          (lastEventId) => call(events, { key, headers: { "last-event-id": lastEventId } })
        )
        for (const answer of bad) {
          expect(answer.status).toBe(400)
          expect(answer.json.error.code).toBe("invalid_request")
          expect(answer.json.error.message).toContain("last-event-id")
        }
        const whole = yield* call(events, { key })
        expect(whole.status).toBe(200)
        expect(whole.headers.get("content-type")).toContain("text/event-stream")
        const messages = messagesOf(whole.text)
        expectWholeStream(messages, "Completed")
        const resumed = yield* call(events, { key, headers: { "last-event-id": "1" } })
        expect(messagesOf(resumed.text)).toEqual(messages.slice(1))
        const done = yield* awaitDone(gateway.url, key, id)
        expect(done.json).toMatchObject({ id, status: "completed", percentComplete: 100 })
        expectNoCardData(gateway, [posted, ...bad, whole, resumed, done])
      })
    ))

  it.live("a POST whose answers are lost: the stream starts with its retries and the engine's pause (Retrying), then the quote", () =>
    withGateway((gateway) =>
      Effect.gen(function*() {
        const key = Redacted.value((yield* gateway.keys.create({ name: "lost answers" })).key)
        // the first run's attempts (4) all processed, their answers lost
        yield* gateway.sandbox.setFaults([{ route: "createQuote", kind: "dropAnswer", times: 4 }])
        const posted = yield* post(gateway, key, "lost-1")
        const id: string = posted.json.id
        const whole = yield* call(`${gateway.url}/v1/quotes/${id}/events`, { key })
        const messages = messagesOf(whole.text)
        const [retries, rest] = [messages.slice(0, 4), messages.slice(4)]
        // the first run's retries (attempts 2 to 4), then the engine's pause (attempt 5)
        expect(retries.map((message) => [message.id, message.event, message.data.attempt])).toEqual(
          [1, 2, 3, 4].map((id) => [id, "Retrying", id + 1])
        )
        expect(retries[3]).toMatchObject({
          data: { transactionId: "", requestId: id, attempt: 5, reason: "TransportError" }
        })
        // the pause: its setting, up to a fifth longer at random
        expect(retries[3]!.data.delay).toBeGreaterThanOrEqual(200)
        expect(retries[3]!.data.delay).toBeLessThanOrEqual(240)
        // the rest, numbered on from it, is the whole stream of the quote
        expectWholeStream(rest.map((message) => ({ ...message, id: message.id - 4 })), "Completed")
        const created = (yield* gateway.sandbox.journal).transactionsByRequestId[id]
        expect(created).toEqual([rest[0]!.data.transactionId])
        expectNoCardData(gateway, [posted, whole])
      }).pipe(Effect.ensuring(gateway.sandbox.setFaults([]))), { resumeDelays: ["200 millis"] }))
})
