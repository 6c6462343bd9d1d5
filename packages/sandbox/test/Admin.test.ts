import { expect, layer } from "@effect/vitest"
import { ErrorBody, Routes } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import {
  admin,
  call,
  credentialsForm,
  exchangeHeaders,
  getTransaction,
  pollUntil,
  postQuote,
  quoteBody,
  tokenFor,
  tokenRequest
} from "./helpers.js"

layer(Sandbox.layer({ timeScale: 0.01, adminKey: "test-admin-key" }), { excludeTestServices: true })(
  "admin API",
  (it) => {
    it.effect("a missing admin key answers 401, a wrong one 403, both with an Error body", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        expect(server.adminKey).toBe("test-admin-key")
        const paths = ["/journal", "/transactions", "/faults", "/settings"]
        for (const path of paths) {
          const missing = yield* call(`${server.baseUrl}/__sandbox${path}`)
          expect(missing.status).toBe(401)
          expect(missing.body).toEqual({ ErrorCode: ErrorBody.ErrorCodes.unauthorized, Message: expect.any(String) })
          const wrong = yield* call(`${server.baseUrl}/__sandbox${path}`, {
            headers: { "x-admin-key": "sandbox-admin-key" }
          })
          expect(wrong.status).toBe(403)
          expect(wrong.body.ErrorCode).toBe(ErrorBody.ErrorCodes.unauthorized)
          expect((yield* admin(server, "GET", path)).status).toBe(200)
        }
        const reset = yield* call(`${server.baseUrl}/__sandbox/reset`, { method: "POST" })
        expect(reset.status).toBe(401)
      }))

    it.effect("the journal counts requests per route and transactions per requestId, and lists them in order", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        expect((yield* admin(server, "POST", "/reset")).status).toBe(204)
        const token = yield* tokenFor(server)
        const headers = exchangeHeaders(token, { previousAttempts: 0 })
        const created = yield* postQuote(server, headers, quoteBody(TestData.Cards.success))
        const id = created.body.transactionId
        yield* getTransaction(server, headers, id)
        yield* getTransaction(server, headers, id)
        yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers })
        yield* call(`${server.baseUrl}/nowhere`)
        const reply = yield* admin(server, "GET", "/journal")
        expect(reply.status).toBe(200)
        const journal = reply.body
        expect(journal.requests).toEqual({
          token: 1,
          heartbeat: 1,
          createQuote: 1,
          getTransaction: 2,
          admin: 1,
          other: 1
        })
        expect(journal.transactionsByRequestId).toEqual({ [headers.requestId!]: [id] })
        expect(journal.getsByTransactionId).toEqual({ [id]: 2 })
        expect(journal.entries.map((entry: any) => [entry.route, entry.method, entry.status])).toEqual([
          ["admin", "POST", 204],
          ["token", "POST", 200],
          ["createQuote", "POST", 201],
          ["getTransaction", "GET", 200],
          ["getTransaction", "GET", 200],
          ["heartbeat", "GET", 200],
          ["other", "GET", 404]
        ])
        expect(journal.entries[2]).toEqual({
          time: expect.stringMatching(/Z$/),
          route: "createQuote",
          method: "POST",
          path: Routes.quotePath(server.stage),
          status: 201,
          requestId: headers.requestId,
          previousAttempts: 0,
          transactionId: id
        })
        for (const secret of [token, TestData.partner.clientSecret, TestData.partner.apiKey, TestData.Cards.success]) {
          expect(reply.text).not.toContain(secret)
        }
        expect(yield* server.journal).toMatchObject({ requests: { ...journal.requests, admin: 2 } })
      }))

    it.effect("transactions lists every transaction with its state, card masked", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* admin(server, "POST", "/reset")
        const token = yield* tokenFor(server)
        const headers = exchangeHeaders(token)
        const ok = yield* postQuote(server, headers, quoteBody(TestData.Cards.success))
        const failing = yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.invalid))
        const pending = yield* admin(server, "GET", "/transactions")
        expect(pending.body.map((summary: any) => summary.state)).toEqual(["pending", "pending"])
        yield* pollUntil(
          getTransaction(server, headers, ok.body.transactionId),
          (reply) => reply.body.response.isCompleted
        )
        yield* pollUntil(
          getTransaction(server, headers, failing.body.transactionId),
          (reply) => reply.status === 400
        )
        const done = yield* admin(server, "GET", "/transactions")
        expect(done.body).toEqual([
          expect.objectContaining({
            transactionId: ok.body.transactionId,
            clientId: TestData.partner.clientId,
            requestId: headers.requestId,
            cardNumber: "****0001",
            scenario: "success",
            state: "completed",
            percentComplete: 100,
            actualCardValue: 100,
            exchangeCardValue: 85
          }),
          expect.objectContaining({
            transactionId: failing.body.transactionId,
            scenario: "invalid",
            state: "failed",
            errorCode: ErrorBody.ErrorCodes.invalidCard
          })
        ])
        expect(done.text).not.toContain(TestData.Cards.success)
        expect(done.text).not.toContain(TestData.pin)
      }).pipe(
        // Real durations (2 s and 1 s), so both transactions are surely pending at the first listing,
        // taken a few requests after the POSTs, even on a loaded machine.
        Effect.provide(Sandbox.layer({ timeScale: 1, adminKey: "test-admin-key", logLevel: "None" }))
      ))

    it.effect("faults are read and replaced through PUT /__sandbox/faults; a bad rule answers 400", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* admin(server, "POST", "/reset")
        const rules = [{ route: "heartbeat", kind: "status503", times: 1, retryAfterSeconds: 3 }]
        const put = yield* admin(server, "PUT", "/faults", rules)
        expect(put.status).toBe(200)
        expect(put.body).toEqual(rules)
        expect((yield* admin(server, "GET", "/faults")).body).toEqual(rules)
        const token = yield* tokenFor(server)
        const heartbeat = call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) })
        expect((yield* heartbeat).status).toBe(503)
        expect((yield* heartbeat).status).toBe(200)
        const bad = yield* admin(server, "PUT", "/faults", [{ route: "heartbeat", kind: "explode" }])
        expect(bad.status).toBe(400)
        expect(bad.body.ErrorCode).toBe(ErrorBody.ErrorCodes.invalidBody)
        expect(bad.body.Message).toContain("kind")
        const malformed = yield* call(`${server.baseUrl}/__sandbox/faults`, {
          method: "PUT",
          headers: { "x-admin-key": server.adminKey, "content-type": "application/json" },
          body: "[{"
        })
        expect(malformed.status).toBe(400)
        expect(malformed.body.ErrorCode).toBe(ErrorBody.ErrorCodes.invalidBody)
        expect((yield* admin(server, "GET", "/faults")).body).toEqual(rules)
      }))

    it.effect("reset clears transactions, the journal and the faults, and enables every partner", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.success))
        yield* admin(server, "PUT", "/faults", [{ route: "heartbeat", kind: "status500" }])
        yield* admin(server, "POST", `/partners/${TestData.partner.clientId}/disable`)
        yield* admin(server, "PUT", "/settings", { tokenLifetimeSeconds: 5 })
        const reset = yield* admin(server, "POST", "/reset")
        expect(reset.status).toBe(204)
        expect(reset.text).toBe("")
        expect((yield* admin(server, "GET", "/transactions")).body).toEqual([])
        expect((yield* admin(server, "GET", "/faults")).body).toEqual([])
        expect((yield* admin(server, "GET", "/settings")).body).toEqual({ tokenLifetimeSeconds: 3600 })
        const journal = yield* server.journal
        expect(journal.requests).toEqual({
          token: 0,
          heartbeat: 0,
          createQuote: 0,
          getTransaction: 0,
          admin: 4,
          other: 0
        })
        expect(journal.transactionsByRequestId).toEqual({})
        const heartbeat = yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) })
        expect(heartbeat.status).toBe(200)
      }))

    it.effect("partners are disabled and enabled by client id; an unknown one answers 404", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const heartbeat = call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) })
        expect((yield* admin(server, "POST", `/partners/${TestData.partner.clientId}/disable`)).status).toBe(204)
        const refused = yield* heartbeat
        expect(refused.status).toBe(400)
        expect(refused.body.ErrorCode).toBe(ErrorBody.ErrorCodes.partnerNotFound)
        expect((yield* tokenFor(server)).length).toBeGreaterThan(0)
        expect((yield* admin(server, "POST", `/partners/${TestData.partner.clientId}/enable`)).status).toBe(204)
        expect((yield* heartbeat).status).toBe(200)
        const unknown = yield* admin(server, "POST", "/partners/nobody/disable")
        expect(unknown.status).toBe(404)
        expect(unknown.body.ErrorCode).toBe(ErrorBody.ErrorCodes.partnerNotFound)
      }))

    it.effect("settings shorten the token lifetime: a token issued with lifetime 0 is already expired", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const put = yield* admin(server, "PUT", "/settings", { tokenLifetimeSeconds: 0 })
        expect(put.body).toEqual({ tokenLifetimeSeconds: 0 })
        const reply = yield* tokenRequest(server, credentialsForm())
        expect(reply.body.expires_in).toBe(0)
        const heartbeat = yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, {
          headers: exchangeHeaders(reply.body.access_token)
        })
        expect(heartbeat.status).toBe(401)
        expect(heartbeat.body.Message).toContain("expired")
        const bad = yield* admin(server, "PUT", "/settings", { tokenLifetimeSeconds: -1 })
        expect(bad.status).toBe(400)
        yield* admin(server, "PUT", "/settings", { tokenLifetimeSeconds: 3600 })
      }))
  }
)
