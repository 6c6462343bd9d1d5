import { describe, expect, layer } from "@effect/vitest"
import { ErrorBody, Ids, Routes, Transaction } from "@gcx/core"
import { Jwt, Sandbox, Scenarios, TestData } from "@gcx/sandbox"
import { BigDecimal, Effect, Schema } from "effect"
import * as Http from "node:http"
import {
  call,
  exchangeHeaders,
  expectError,
  getTransaction,
  pollUntil,
  postQuote,
  quoteBody,
  type Reply,
  tokenFor
} from "./helpers.js"

const transactionIdPattern = /^[0-9A-HJKMNP-TV-Z]{26}$/
const decodeStatus = Schema.decodeUnknownSync(Transaction.TransactionStatus)

const completed = (reply: Reply) => reply.status !== 200 || reply.body.response.isCompleted === true

/** Starts a quote for the card and returns the 201 answer and the headers to poll with. */
const startQuote = (
  server: Sandbox.Service,
  cardNumber: string,
  options: { readonly pin?: string; readonly productLineId?: string; readonly partner?: TestData.Partner } = {}
) =>
  Effect.gen(function*() {
    const token = yield* tokenFor(server, options.partner)
    const headers = exchangeHeaders(token, options.partner === undefined ? {} : { partner: options.partner })
    const created = yield* postQuote(server, headers, quoteBody(cardNumber, options))
    expect(created.status).toBe(201)
    return { created, headers, transactionId: created.body.transactionId as string }
  })

/** Runs a quote to its end and returns the final GET answer. */
const finalAnswer = (server: Sandbox.Service, cardNumber: string, options: Parameters<typeof startQuote>[2] = {}) =>
  Effect.gen(function*() {
    const { headers, transactionId } = yield* startQuote(server, cardNumber, options)
    const last = yield* pollUntil(getTransaction(server, headers, transactionId), completed)
    return { last, headers, transactionId }
  })

const money = (amount: string) => Number(amount)

layer(Sandbox.layer({ timeScale: 0.01 }), { excludeTestServices: true })("exchange", (it) => {
  describe("heartbeat", () => {
    it.effect("answers 200 with SVC-TRACE-ID for a valid token, x-api-key and requestId", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const reply = yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) })
        expect(reply.status).toBe(200)
        expect(reply.body).toMatchObject({ status: "OK", partner: TestData.partner.clientId })
        expect(reply.headers.get(Routes.Headers.traceId)).toMatch(/^[0-9a-f]{32}$/)
      }))

    it.effect("matches the requestId header case-insensitively", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        // fetch lowercases header names; node:http sends them as written.
        const statusWith = (name: string) =>
          Effect.callback<number>((resume) => {
            const request = Http.request(`${server.baseUrl}${Routes.heartbeatPath}`, {
              headers: { Authorization: `Bearer ${token}`, "X-API-KEY": TestData.partner.apiKey, [name]: "r-1" }
            }, (response) => {
              response.resume()
              resume(Effect.succeed(response.statusCode!))
            })
            request.end()
          })
        for (const name of ["requestId", "requestid", "REQUESTID", "RequestID"]) {
          expect(yield* statusWith(name)).toBe(200)
        }
      }))
  })

  describe("POST quote", () => {
    it.effect("answers 201 with a QuoteResponse, a Location holding the GET address and SVC-TRACE-ID", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const { created, headers, transactionId } = yield* startQuote(server, TestData.Cards.success)
        expect(transactionId).toMatch(transactionIdPattern)
        expect(created.body).toMatchObject({ isCompleted: false, percentComplete: 0 })
        // Seconds to the millisecond: the 2 s card at this suite's timeScale.
        expect(created.body.expectedCompletionTime).toBeGreaterThan(0)
        expect(created.body.expectedCompletionTime).toBeLessThanOrEqual(2 * 0.01)
        expect(created.body.actualCardValue).toBeUndefined()
        expect(created.body.responseTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(created.headers.get(Routes.Headers.traceId)).toMatch(/^[0-9a-f]{32}$/)
        const location = created.headers.get("location")!
        expect(location).toBe(`${server.baseUrl}${Routes.transactionPath(transactionId, server.stage)}`)
        const read = yield* call(location, { headers })
        expect(read.status).toBe(200)
        expect(read.body.entityid).toBe(transactionId)
      }))

    it.effect("the instant card answers the POST already completed", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const { created } = yield* startQuote(server, TestData.Cards.instant)
        expect(created.body).toMatchObject({
          isCompleted: true,
          percentComplete: 100,
          expectedCompletionTime: 0,
          actualCardValue: 50,
          exchangeCardValue: 42.5
        })
      }))

    it.effect("serves the quote paths with and without the stage segment; a wrong stage is 404", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const created = yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.instant), {
          staged: false
        })
        expect(created.status).toBe(201)
        const id = created.body.transactionId
        expect(created.headers.get("location")).toBe(`${server.baseUrl}${Routes.transactionPath(id)}`)
        expect((yield* getTransaction(server, exchangeHeaders(token), id, { staged: true })).status).toBe(200)
        expect((yield* getTransaction(server, exchangeHeaders(token), id, { staged: false })).status).toBe(200)
        const wrong = yield* call(`${server.baseUrl}${Routes.quotePath("prod")}`, {
          method: "POST",
          headers: exchangeHeaders(token),
          body: quoteBody(TestData.Cards.instant)
        })
        expect(wrong.status).toBe(404)
        expect(wrong.body.ErrorCode).toBe(ErrorBody.ErrorCodes.routeNotFound)
      }))

    it.effect("an unknown productLineId answers 400 exchange.invalid.productLine", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const reply = yield* postQuote(
          server,
          exchangeHeaders(token),
          quoteBody(TestData.Cards.success, { productLineId: "9999" })
        )
        expect(reply.status).toBe(400)
        expect(reply.body.ErrorCode).toBe(ErrorBody.ErrorCodes.invalidProductLine)
      }))

    it.effect("an invalid body answers 400 naming the field, never echoing the card data", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const send = (body: string) => postQuote(server, exchangeHeaders(token), body)
        const secretPin = "98765432"
        const cases: ReadonlyArray<readonly [string, string, string]> = [
          ["[]", ErrorBody.ErrorCodes.invalidBody, "must be a JSON object"],
          ["{}", ErrorBody.ErrorCodes.invalidParameter, "card must be an object"],
          [
            JSON.stringify({ card: { cardNumber: "", pinNumber: secretPin, productLineId: "1000" } }),
            ErrorBody.ErrorCodes.invalidParameter,
            "card.cardNumber must not be empty"
          ],
          [
            JSON.stringify({ card: { cardNumber: TestData.Cards.success, pinNumber: 1234, productLineId: "1000" } }),
            ErrorBody.ErrorCodes.invalidParameter,
            "card.pinNumber must be a string"
          ],
          [
            JSON.stringify({ card: { cardNumber: TestData.Cards.success, pinNumber: secretPin } }),
            ErrorBody.ErrorCodes.invalidParameter,
            "card.productLineId is required"
          ]
        ]
        for (const [body, code, message] of cases) {
          const reply = yield* send(body)
          expect(reply.status).toBe(400)
          expect(reply.body).toEqual({ ErrorCode: code, Message: expect.stringContaining(message) })
          expect(reply.text).not.toContain(secretPin)
          expect(reply.text).not.toContain(TestData.Cards.success)
        }
      }))

    it.effect("an invalid previousAttempts header answers 400 request.invalid.parameter", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const reply = yield* postQuote(
          server,
          { ...exchangeHeaders(token), previousAttempts: "often" },
          quoteBody(TestData.Cards.instant)
        )
        expect(reply.status).toBe(400)
        expect(reply.body.ErrorCode).toBe(ErrorBody.ErrorCodes.invalidParameter)
      }))
  })

  describe("GET transaction", () => {
    it.effect("the success card completes with the full TransactionStatus, wire names exact", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const { last, transactionId } = yield* finalAnswer(server, TestData.Cards.success)
        expect(last.status).toBe(200)
        const body = last.body
        expect(Object.keys(body).sort()).toEqual([
          "completionTime",
          "createdTimestamp",
          "createrid",
          "entityid",
          "percentComplete",
          "request",
          "response",
          "steps",
          "updatedTimespamp"
        ])
        expect(body).toMatchObject({
          entityid: transactionId,
          createrid: TestData.partner.creatorId,
          percentComplete: 100,
          request: { card: { cardNumber: "****0001", pinNumber: "****", productLineId: "1000" } },
          response: {
            transactionId,
            isCompleted: true,
            percentComplete: 100,
            expectedCompletionTime: 0,
            actualCardValue: 100,
            exchangeCardValue: 85
          }
        })
        expect(body.steps.map((step: any) => [step.descriptionTag, step.isCompleted])).toEqual([
          [Transaction.StepTags.vaultCreditCard, true],
          [Transaction.StepTags.fraudCheck, true]
        ])
        expect(body.steps[1].startTime).toBe(body.steps[0].completionTime)
        expect(body.completionTime).toBe(body.steps[1].completionTime)
        expect(body.updatedTimespamp).toBe(body.completionTime)
        expect(Date.parse(body.completionTime) - Date.parse(body.createdTimestamp)).toBe(20)
        const status = decodeStatus(body)
        expect(BigDecimal.format(status.response.exchangeCardValue!)).toBe("85")
      }))

    it.effect("progress moves: percentComplete rises, the vault step completes before the fraud check", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        // The slow card takes 30 s, 300 ms at this time scale.
        const { headers, transactionId } = yield* startQuote(server, TestData.Cards.slow)
        const seen: Array<any> = []
        yield* pollUntil(
          getTransaction(server, headers, transactionId).pipe(
            Effect.tap((reply) => Effect.sync(() => seen.push(reply.body)))
          ),
          completed
        )
        const percents = seen.map((body) => body.percentComplete)
        expect(percents).toEqual([...percents].sort((a, b) => a - b))
        expect(percents.some((p) => p > 0 && p < 40)).toBe(true)
        expect(percents.some((p) => p > 40 && p < 100)).toBe(true)
        expect(percents.at(-1)).toBe(100)
        for (const body of seen) {
          const [vault, fraud] = body.steps
          expect(body.response.isCompleted).toBe(body.percentComplete === 100)
          expect(body.response.actualCardValue === undefined).toBe(!body.response.isCompleted)
          if (body.percentComplete < 40) expect([vault.isCompleted, fraud.startTime]).toEqual([false, undefined])
          if (body.percentComplete >= 40) expect(vault.isCompleted).toBe(true)
          if (fraud.isCompleted) expect(vault.isCompleted).toBe(true)
          expect(body.completionTime === undefined).toBe(body.percentComplete < 100)
          expect(body.response.expectedCompletionTime > 0).toBe(body.percentComplete < 100)
        }
        expect(seen.at(-1).response).toMatchObject({ actualCardValue: 250, exchangeCardValue: 212.5 })
      }))

    const failures = [
      [TestData.Cards.zeroBalance, ErrorBody.ErrorCodes.cardValueOutOfRange, "no remaining balance"],
      [TestData.Cards.invalid, ErrorBody.ErrorCodes.invalidCard, "card number or PIN is not valid"],
      [TestData.Cards.notAccepted, ErrorBody.ErrorCodes.cardNotAccepted, "merchandise return credit"],
      [TestData.Cards.merchantUnavailable, ErrorBody.ErrorCodes.merchantUnavailable, "try again later"]
    ] as const

    for (const [card, code, userMessage] of failures) {
      it.effect(`card ${card} fails with ${code} on every GET from then on`, () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const { created, headers, transactionId } = yield* startQuote(server, card)
          expect(created.body.isCompleted).toBe(false)
          const { last } = { last: yield* pollUntil(getTransaction(server, headers, transactionId), completed) }
          for (const reply of [last, yield* getTransaction(server, headers, transactionId)]) {
            expect(reply.status).toBe(400)
            expect(reply.body).toEqual({
              ErrorCode: code,
              Message: expect.any(String),
              UserMessage: expect.any(String)
            })
            expect(reply.body.UserMessage).toContain(userMessage)
            expect(reply.headers.get(Routes.Headers.traceId)).not.toBeNull()
          }
        }))
    }

    it.effect("PIN 0000 always gives exchange.invalid.card, even on the success card", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const { last } = yield* finalAnswer(server, TestData.Cards.success, { pin: TestData.rejectedPin })
        expect(last.status).toBe(400)
        expect(last.body.ErrorCode).toBe(ErrorBody.ErrorCodes.invalidCard)
      }))

    it.effect("a balance outside the product line's range fails with exchange.card.value.out.of.range", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        // Product line 3000 accepts 1.00 to 50.00; the success card holds 100.00.
        const { last } = yield* finalAnswer(server, TestData.Cards.success, { productLineId: "3000" })
        expect(last.status).toBe(400)
        expect(last.body.ErrorCode).toBe(ErrorBody.ErrorCodes.cardValueOutOfRange)
        expect(last.body.UserMessage).toContain("$1.00 to $50.00")
      }))

    it.effect("any other card succeeds with a balance derived from its number", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const line = TestData.productLines.find((candidate) => candidate.id === "2000")!
        const card = "6006000000000076"
        const { last } = yield* finalAnswer(server, card, { productLineId: line.id })
        const balance = Scenarios.derivedBalance(card, line)
        expect(last.body.response.actualCardValue).toBe(money(BigDecimal.format(balance)))
        expect(last.body.response.exchangeCardValue).toBe(
          money(BigDecimal.format(Scenarios.exchangeValue(balance, line.rate)))
        )
        const again = yield* finalAnswer(server, card, { productLineId: line.id })
        expect(again.last.body.response.actualCardValue).toBe(last.body.response.actualCardValue)
      }))

    it.effect("exchangeCardValue rounds half-even to cents", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const line = TestData.productLines.find((candidate) => candidate.id === "1000")!
        // Find a derived card whose balance × 0.85 is an exact tie at the third decimal, with an even cent before
        // it: half-even rounds it down where half-up would round it up.
        let card = ""
        for (let n = 0; card === ""; n++) {
          const candidate = `7${String(n).padStart(15, "0")}`
          const product = BigDecimal.scale(BigDecimal.multiply(Scenarios.derivedBalance(candidate, line), line.rate), 4)
          if (product.value % 100n === 50n && (product.value / 100n) % 2n === 0n) card = candidate
        }
        const { last } = yield* finalAnswer(server, card)
        const balance = Scenarios.derivedBalance(card, line)
        const exact = BigDecimal.multiply(balance, line.rate)
        const halfUp = BigDecimal.round(exact, { scale: 2, mode: "half-ceil" })
        const halfEven = BigDecimal.round(exact, { scale: 2, mode: "half-even" })
        expect(BigDecimal.equals(halfUp, halfEven)).toBe(false)
        expect(last.body.response.exchangeCardValue).toBe(money(BigDecimal.format(halfEven)))
      }))

    it.effect("a human-inquiry partner gets its agent's UserMessage, not the merchant's", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const agent = yield* finalAnswer(server, TestData.Cards.notAccepted, { partner: TestData.agentPartner })
        const merchant = yield* finalAnswer(server, TestData.Cards.notAccepted)
        expect(agent.last.status).toBe(400)
        expect(agent.last.body.ErrorCode).toBe(ErrorBody.ErrorCodes.cardNotAccepted)
        expect(agent.last.body.UserMessage).toMatch(new RegExp(`^${TestData.agentPartner.agent.name}: `))
        expect(agent.last.body.UserMessage).not.toBe(merchant.last.body.UserMessage)
        expect(merchant.last.body.UserMessage).toBe(
          Scenarios.byCard[TestData.Cards.notAccepted]!.outcome._tag ===
              "Refused"
            ? (Scenarios.byCard[TestData.Cards.notAccepted]!.outcome as any).refusal.merchantMessage
            : ""
        )
      }))

    it.effect("an unknown id, or another partner's transaction, answers 404 exchange.transaction.not.found", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const { transactionId } = yield* startQuote(server, TestData.Cards.instant)
        const agentToken = yield* tokenFor(server, TestData.agentPartner)
        const agentHeaders = exchangeHeaders(agentToken, { partner: TestData.agentPartner })
        for (const id of [Ids.makeTransactionId(), transactionId]) {
          const reply = yield* getTransaction(server, agentHeaders, id)
          expect(reply.status).toBe(404)
          expect(reply.body.ErrorCode).toBe(ErrorBody.ErrorCodes.transactionNotFound)
        }
      }))
  })

  describe("authentication and headers", () => {
    const endpoints = (server: Sandbox.Service, headers: Record<string, string>) => [
      call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers }),
      postQuote(server, headers, quoteBody(TestData.Cards.instant)),
      getTransaction(server, headers, Ids.makeTransactionId())
    ]

    it.effect("a missing, malformed, forged or expired bearer token answers 401 with an Error body", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const now = Math.floor(Date.now() / 1000)
        const forged = Jwt.sign({
          iss: "gcx-sandbox",
          sub: TestData.partner.clientId,
          client_id: TestData.partner.clientId,
          scope: "x",
          token_use: "access",
          iat: now,
          exp: now + 3600,
          jti: "forged"
        }, new Uint8Array(32))
        yield* server.setTokenLifetime(0)
        const expired = yield* tokenFor(server)
        yield* server.setTokenLifetime(3600)
        const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
          [{ ...exchangeHeaders(token), authorization: "" }, "required"],
          [{ ...exchangeHeaders(token), authorization: "Bearer not-a-jwt" }, "malformed"],
          [exchangeHeaders(forged), "signature"],
          [exchangeHeaders(expired), "expired"]
        ]
        for (const [headers, message] of cases) {
          for (const reply of yield* Effect.all(endpoints(server, headers))) {
            expect(reply.status).toBe(401)
            expect(reply.body).toEqual({
              ErrorCode: ErrorBody.ErrorCodes.unauthorized,
              Message: expect.stringContaining(message)
            })
          }
        }
      }))

    it.effect("a missing, wrong or other partner's x-api-key answers 400 exchange.invalid.x-api-key", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const { "x-api-key": _, ...withoutKey } = exchangeHeaders(token)
        for (
          const headers of [
            withoutKey,
            { ...exchangeHeaders(token), "x-api-key": "wrong" },
            exchangeHeaders(token, { partner: { ...TestData.partner, apiKey: TestData.agentPartner.apiKey } })
          ]
        ) {
          expectError(yield* Effect.all(endpoints(server, headers)), 400, ErrorBody.ErrorCodes.invalidApiKey)
        }
      }))

    it.effect("a missing requestId answers 400 request.missing.parameter.requestId", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const { requestId: _, ...withoutRequestId } = exchangeHeaders(token)
        for (const headers of [withoutRequestId, { ...withoutRequestId, requestId: "  " }]) {
          expectError(yield* Effect.all(endpoints(server, headers)), 400, ErrorBody.ErrorCodes.missingRequestId)
        }
      }))

    it.effect("a disabled partner gets exchange.partner.not.found until enabled again", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server, TestData.agentPartner)
        const headers = exchangeHeaders(token, { partner: TestData.agentPartner })
        yield* server.setPartnerEnabled(TestData.agentPartner.clientId, false)
        expectError(yield* Effect.all(endpoints(server, headers)), 400, ErrorBody.ErrorCodes.partnerNotFound)
        yield* server.setPartnerEnabled(TestData.agentPartner.clientId, true)
        expect((yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers })).status).toBe(200)
      }))
  })

  describe("idempotency (service-notes.md)", () => {
    /** POSTs the success card again and again under one requestId, with the given previousAttempts. */
    const sender = Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const token = yield* tokenFor(server)
      const requestId = Ids.makeRequestId()
      return Object.assign(
        (previousAttempts?: number) =>
          postQuote(
            server,
            exchangeHeaders(token, { requestId, ...(previousAttempts === undefined ? {} : { previousAttempts }) }),
            quoteBody(TestData.Cards.success)
          ),
        { server, requestId }
      )
    })

    it.effect("a retry with previousAttempts incremented returns the original 201 and creates nothing", () =>
      Effect.gen(function*() {
        const send = yield* sender
        const first = yield* send(0)
        expect(first.status).toBe(201)
        yield* Effect.sleep("25 millis") // the transaction is complete now; the replay still answers the original
        const retry = yield* send(1)
        expect(retry.status).toBe(201)
        expect(retry.text).toBe(first.text)
        expect(retry.headers.get("location")).toBe(first.headers.get("location"))
        const again = yield* send(3)
        expect(again.text).toBe(first.text)
        const journal = yield* send.server.journal
        expect(journal.transactionsByRequestId[send.requestId]).toEqual([first.body.transactionId])
        const transactions = yield* send.server.transactions
        expect(transactions.filter((transaction) => transaction.requestId === send.requestId)).toHaveLength(1)
      }))

    it.effect("the same requestId with an unchanged or lower previousAttempts answers 400", () =>
      Effect.gen(function*() {
        const send = yield* sender
        expect((yield* send()).status).toBe(201)
        expectError([yield* send(), yield* send(0)], 400, ErrorBody.ErrorCodes.duplicateRequest)
        expect((yield* send(2)).status).toBe(201)
        expect((yield* send(2)).status).toBe(400)
        expect((yield* send(1)).status).toBe(400)
      }))

    it.effect("concurrent POSTs with one requestId create exactly one transaction", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const headers = exchangeHeaders(token)
        const replies = yield* Effect.all(
          Array.from({ length: 10 }, () => postQuote(server, headers, quoteBody(TestData.Cards.success))),
          { concurrency: "unbounded" }
        )
        expect(replies.filter((reply) => reply.status === 201)).toHaveLength(1)
        expect(replies.filter((reply) => reply.status === 400)).toHaveLength(9)
        const journal = yield* server.journal
        expect(journal.transactionsByRequestId[headers.requestId!]).toHaveLength(1)
      }))

    it.effect("the same requestId from two partners are two requests", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const requestId = Ids.makeRequestId()
        const partnerToken = yield* tokenFor(server)
        const agentToken = yield* tokenFor(server, TestData.agentPartner)
        const one = yield* postQuote(server, exchangeHeaders(partnerToken, { requestId }), quoteBody("1111"))
        const two = yield* postQuote(
          server,
          exchangeHeaders(agentToken, { requestId, partner: TestData.agentPartner }),
          quoteBody("1111")
        )
        expect([one.status, two.status]).toEqual([201, 201])
        expect(one.body.transactionId).not.toBe(two.body.transactionId)
      }))
  })
})
