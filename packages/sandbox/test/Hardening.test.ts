/**
 * Issue 15, sandbox items: a request is served as the route it is faulted and
 * journaled as (other spellings answer 404); requestIds are bounded; the
 * transactions and idempotency records are bounded.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { ErrorBody, Routes } from "@gcx/core"
import { Api, Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import {
  exchangeHeaders,
  expectError,
  getTransaction,
  postQuote,
  quoteBody,
  rawRequest,
  type Reply,
  tokenFor
} from "./helpers.js"

const quote = Routes.quotePath()

/** Spellings of the POST quote path that the spec does not define. */
const quoteSpellings = [
  "/V3/EXCHANGE/QUOTE",
  `${quote}/`,
  `/${quote}`,
  `${quote};x`,
  `/SANDBOX${quote}`,
  `/sandbox/${quote}`
]

/** Spellings of the heartbeat path that the spec does not define. */
const heartbeatSpellings = [
  Routes.heartbeatPath.toUpperCase(),
  `${Routes.heartbeatPath}/`,
  `/${Routes.heartbeatPath}`,
  `${Routes.heartbeatPath};x`
]

layer(Sandbox.layer({ timeScale: 0.01 }), { excludeTestServices: true })("hardening", (it) => {
  describe("requests are served as the route they are journaled and faulted as", () => {
    it.effect("with a createQuote:status503 rule, every other spelling of the POST is a 404 journaled as other", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* server.reset
        const token = yield* tokenFor(server)
        yield* server.setFaults([{ route: "createQuote", kind: "status503" }])
        for (const path of quoteSpellings) {
          const reply = yield* rawRequest(
            server.baseUrl,
            "POST",
            path,
            exchangeHeaders(token),
            quoteBody(TestData.Cards.instant)
          )
          expect(reply.status, path).toBe(404)
          expect(reply.body.ErrorCode, path).toBe(ErrorBody.ErrorCodes.routeNotFound)
        }
        // the canonical spellings, with and without the stage, get the fault
        const staged = yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.instant))
        const unstaged = yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.instant), {
          staged: false
        })
        expectError([staged, unstaged], 503, ErrorBody.ErrorCodes.serviceUnavailable)
        const journal = yield* server.journal
        expect(yield* server.transactions).toHaveLength(0)
        expect(journal.requests.createQuote).toBe(2)
        expect(journal.requests.other).toBe(quoteSpellings.length)
        const others = journal.entries.filter((entry) => entry.route === "other")
        expect(others.map((entry) => entry.path)).toEqual(quoteSpellings)
        for (const entry of others) expect(entry).toMatchObject({ status: 404 })
        for (const entry of others) expect(entry.faults).toBeUndefined()
      }))

    it.effect("with a heartbeat reset rule, every other spelling of the heartbeat is a 404, never served", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* server.reset
        const token = yield* tokenFor(server)
        yield* server.setFaults([{ route: "heartbeat", kind: "reset" }])
        for (const path of heartbeatSpellings) {
          const reply = yield* rawRequest(server.baseUrl, "GET", path, exchangeHeaders(token))
          expect(reply.status, path).toBe(404)
        }
        const canonical = yield* Effect.flip(
          rawRequest(server.baseUrl, "GET", Routes.heartbeatPath, exchangeHeaders(token))
        )
        expect(String(canonical)).toMatch(/socket hang up|ECONNRESET/)
        const journal = yield* server.journal
        expect(journal.requests.heartbeat).toBe(1)
        expect(journal.requests.other).toBe(heartbeatSpellings.length)
      }))

    it.effect("a transaction GET with a `;` suffix or a trailing slash is a 404 route, the exact one is served", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* server.reset
        const token = yield* tokenFor(server)
        const created = yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.instant))
        const id = created.body.transactionId as string
        for (const path of [`${Routes.transactionPath(id)};x`, `${Routes.transactionPath(id)}/`]) {
          const reply = yield* rawRequest(server.baseUrl, "GET", path, exchangeHeaders(token))
          expect(reply.status, path).toBe(404)
          expect(reply.body.ErrorCode, path).toBe(ErrorBody.ErrorCodes.routeNotFound)
        }
        expect((yield* getTransaction(server, exchangeHeaders(token), id)).status).toBe(200)
        const journal = yield* server.journal
        expect(journal.getsByTransactionId[id]).toBe(1)
      }))
  })

  describe("requestId", () => {
    it.effect(`at most ${Api.maxRequestIdLength} characters of A-Z a-z 0-9 - _; otherwise 400 request.invalid.parameter`, () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* server.reset
        const token = yield* tokenFor(server)
        const longest = "a-_Z9".repeat(26).slice(0, Api.maxRequestIdLength)
        const accepted = yield* postQuote(
          server,
          exchangeHeaders(token, { requestId: longest }),
          quoteBody(TestData.Cards.instant)
        )
        expect(accepted.status).toBe(201)
        const refused: Array<Reply> = []
        for (const requestId of [`${longest}b`, "x".repeat(10_000), "has space", "dot.ted", "é", "semi;colon"]) {
          refused.push(
            yield* postQuote(server, exchangeHeaders(token, { requestId }), quoteBody(TestData.Cards.instant))
          )
          refused.push(
            yield* getTransaction(server, exchangeHeaders(token, { requestId }), "1JXX657P9VCKN74WVFNBH75GWR")
          )
        }
        expectError(refused, 400, ErrorBody.ErrorCodes.invalidParameter)
        for (const reply of refused) expect(reply.text).not.toContain("xxxxxxxx")
        // nothing of the refused ones is stored
        expect(yield* server.transactions).toHaveLength(1)
        expect(Object.keys((yield* server.journal).transactionsByRequestId)).toEqual([longest])
      }))
  })
})

describe("bounded transactions", () => {
  it.live("past maxTransactions the oldest finished transaction is evicted first, with its requestId", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.make({ timeScale: 1, maxTransactions: 3 })
      const token = yield* tokenFor(server)
      const create = (card: string, requestId: string, previousAttempts?: number) =>
        postQuote(
          server,
          exchangeHeaders(token, { requestId, ...(previousAttempts === undefined ? {} : { previousAttempts }) }),
          quoteBody(card)
        )
      // A slow one (30 s) first: the oldest, but running; then two instant ones (finished at once).
      const slow = yield* create(TestData.Cards.slow, "slow")
      const first = yield* create(TestData.Cards.instant, "first")
      yield* create(TestData.Cards.instant, "second")
      const fourth = yield* create(TestData.Cards.instant, "fourth")
      expect(fourth.status).toBe(201)
      const ids = (yield* server.transactions).map((transaction) => transaction.transactionId)
      // the oldest finished ("first") went, not the older running one
      expect(ids).toHaveLength(3)
      expect(ids).toContain(slow.body.transactionId)
      expect(ids).not.toContain(first.body.transactionId)
      const gone = yield* getTransaction(server, exchangeHeaders(token), first.body.transactionId)
      expectError([gone], 404, ErrorBody.ErrorCodes.transactionNotFound)
      // its idempotency record went with it: the same requestId creates a new transaction
      const again = yield* create(TestData.Cards.instant, "first")
      expect(again.status).toBe(201)
      expect(again.body.transactionId).not.toBe(first.body.transactionId)
      // the running one's record is kept: its retry replays the original
      const replay = yield* create(TestData.Cards.slow, "slow", 1)
      expect(replay.body.transactionId).toBe(slow.body.transactionId)
      // when nothing has finished, the oldest goes
      const running = yield* Sandbox.make({ timeScale: 1, maxTransactions: 2 })
      const runningToken = yield* tokenFor(running)
      const make = (requestId: string) =>
        postQuote(running, exchangeHeaders(runningToken, { requestId }), quoteBody(TestData.Cards.slow))
      const oldest = yield* make("a")
      yield* make("b")
      yield* make("c")
      const kept = (yield* running.transactions).map((transaction) => transaction.transactionId)
      expect(kept).toHaveLength(2)
      expect(kept).not.toContain(oldest.body.transactionId)
    }).pipe(Effect.scoped))

  it.live("the journal's indexes drop an evicted transaction: transactionsByRequestId and getsByTransactionId", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.make({ timeScale: 1, maxTransactions: 2 })
      const token = yield* tokenFor(server)
      // Each transaction is created (instant card: finished at once) and read once.
      const createAndRead = (requestId: string) =>
        Effect.gen(function*() {
          const created = yield* postQuote(
            server,
            exchangeHeaders(token, { requestId }),
            quoteBody(TestData.Cards.instant)
          )
          expect(created.status).toBe(201)
          const transactionId: string = created.body.transactionId
          expect((yield* getTransaction(server, exchangeHeaders(token), transactionId)).status).toBe(200)
          return transactionId
        })
      const a = yield* createAndRead("a")
      const b = yield* createAndRead("b")
      const before = yield* server.journal
      expect(before.transactionsByRequestId).toEqual({ a: [a], b: [b] })
      expect(before.getsByTransactionId).toEqual({ [a]: 1, [b]: 1 })
      // A third evicts the oldest finished one (a), with its index entries.
      const c = yield* createAndRead("c")
      const after = yield* server.journal
      expect(after.transactionsByRequestId).toEqual({ b: [b], c: [c] })
      expect(after.getsByTransactionId).toEqual({ [b]: 1, [c]: 1 })
      // The evicted requestId used again lists only its new transaction; b goes in turn.
      const again = yield* createAndRead("a")
      expect(again).not.toBe(a)
      const last = yield* server.journal
      expect(last.transactionsByRequestId).toEqual({ c: [c], a: [again] })
      expect(last.getsByTransactionId).toEqual({ [c]: 1, [again]: 1 })
      // The counts and entries still cover every request.
      expect(last.requests.createQuote).toBe(4)
      expect(last.requests.getTransaction).toBe(4)
      // Many more stay bounded by maxTransactions.
      for (let index = 0; index < 20; index++) yield* createAndRead(`many-${index}`)
      const many = yield* server.journal
      expect(Object.keys(many.transactionsByRequestId)).toHaveLength(2)
      expect(Object.keys(many.getsByTransactionId)).toHaveLength(2)
    }).pipe(Effect.scoped))
})
