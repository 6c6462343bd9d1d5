import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Card, Errors } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Option, Redacted, Stream } from "effect"
import { CardFingerprint, QuotePoller } from "../src/index.js"
import { card, sandbox, withPoller } from "./fixtures.js"

const { Cards } = TestData

const sentFor = (requestId: string) =>
  Effect.flatMap(Sandbox.SandboxServer, (server) => server.journal).pipe(
    Effect.map((journal) => ({
      transactions: journal.transactionsByRequestId[requestId] ?? [],
      posts: journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
    }))
  )

describe("QuotePoller: a requestId belongs to one card", () => {
  layer(sandbox({ timeScale: 0.01 }), { excludeTestServices: true })("over real HTTP", (it) => {
    it.effect("reused with another card: RequestIdConflict before any I/O, naming no card", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const requestId = "poller-conflict-1"
        const first = yield* poller.getQuote(card(Cards.instant), { requestId })
        const other = card(Cards.success)
        const error = yield* Effect.flip(poller.getQuote(other, { requestId }))
        assert(error._tag === "RequestIdConflict")
        expect(error.requestId).toBe(requestId)
        expect(error.message).not.toContain(other.cardNumber)
        expect(error.message).not.toContain(other.pinNumber)
        // the stream fails the same way, and neither sent a POST
        const streamed = yield* Effect.flip(
          Stream.runDrain(poller.quote({ ...other, pinNumber: "7777" }, { requestId }))
        )
        expect(streamed._tag).toBe("RequestIdConflict")
        const sent = yield* sentFor(requestId)
        expect(sent.transactions).toEqual([first.transactionId])
        expect(sent.posts.length).toBe(1)
      }).pipe(withPoller()))

    it.effect("reused with the same card: the same quote, POSTed with previousAttempts counted on (no 400)", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        const requestId = "poller-same-card-1"
        const first = yield* poller.getQuote(card(Cards.success), { requestId })
        // the same card, given as Redacted values: the same card all the same
        const again = yield* poller.getQuote(
          yield* Card.validate(card(Cards.success)).pipe(
            Effect.map((validated) => ({ ...card(Cards.success), cardNumber: validated.cardNumber }))
          ),
          { requestId }
        )
        expect(again.transactionId).toBe(first.transactionId)
        const sent = yield* sentFor(requestId)
        expect(sent.transactions).toEqual([first.transactionId])
        expect(sent.posts.map((entry) => [entry.previousAttempts, entry.status])).toEqual([[0, 201], [1, 201]])
      }).pipe(withPoller()))

    it.effect("a POST refused after its attempts is quoted again with the error's requestId and attempts: its transaction", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const poller = yield* QuotePoller.QuotePoller
        // every answer lost after processing: the first attempt created the transaction
        yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer" }])
        const refused = yield* Effect.flip(Stream.runDrain(poller.quote(card(Cards.instant))))
        expect(refused._tag).toBe("TransportError")
        const resumption = Option.getOrThrow(Errors.postResumption(refused))
        const { previousAttempts, requestId } = resumption
        expect(previousAttempts).toBe(3)
        const created = (yield* sentFor(requestId)).transactions
        expect(created).toHaveLength(1)

        yield* server.setFaults([])
        const quote = yield* poller.getQuote(card(Cards.instant), resumption)
        expect(quote.transactionId).toBe(created[0])
        const sent = yield* sentFor(requestId)
        expect(sent.transactions).toEqual(created)
        expect(sent.posts.map((entry) => entry.previousAttempts)).toEqual([0, 1, 2, 3])
      }).pipe(withPoller({ client: { retry: { maxAttempts: 3, baseDelay: "5 millis", maxDelay: "50 millis" } } })))

    it.effect("the record is bounded: the oldest requestId is forgotten first", () =>
      Effect.gen(function*() {
        const poller = yield* QuotePoller.QuotePoller
        yield* poller.getQuote(card(Cards.instant), { requestId: "poller-bounded-1" })
        yield* poller.getQuote(card(Cards.instant), { requestId: "poller-bounded-2" })
        yield* poller.getQuote(card(Cards.instant), { requestId: "poller-bounded-3" })
        // "poller-bounded-1" is forgotten: the service itself answers its reuse (previousAttempts 0 again: refused)
        const forgotten = yield* Effect.flip(poller.getQuote(card(Cards.success), { requestId: "poller-bounded-1" }))
        expect(forgotten._tag).toBe("InvalidRequest")
        const remembered = yield* Effect.flip(poller.getQuote(card(Cards.success), { requestId: "poller-bounded-3" }))
        expect(remembered._tag).toBe("RequestIdConflict")
      }).pipe(withPoller({ poller: { rememberedRequestIds: 2 } })))
  })
})

describe("CardFingerprint", () => {
  const validated = (input: ReturnType<typeof card>) => Effect.runSync(Card.validate(input))
  it("is keyed: the same card gives the same fingerprint under one key, another under another", () => {
    const one = CardFingerprint.random()
    const two = CardFingerprint.random()
    const a = validated(card(Cards.success))
    expect(one.of(a)).toBe(one.of(validated(card(` ${Cards.success} `))))
    expect(one.of(a)).toMatch(/^[0-9a-f]{64}$/)
    expect(one.of(a)).not.toBe(two.of(a))
    expect(one.of(a)).not.toContain(Cards.success)
  })

  it("tells cards apart by number, PIN and product line, without ambiguity between the fields", () => {
    const print = CardFingerprint.random()
    const base = card(Cards.success)
    const prints = [
      base,
      { ...base, pinNumber: "1235" },
      { ...base, productLineId: "2000" },
      { ...base, cardNumber: `${base.cardNumber}1`, pinNumber: base.pinNumber.slice(1) }
    ].map((input) => print.of(validated(input)))
    expect(new Set(prints).size).toBe(prints.length)
  })

  it("derive: one data key gives one fingerprint key on every node, never the data key itself", () => {
    const key = Redacted.make(new Uint8Array(32).map((_, index) => index + 1))
    const a = validated(card(Cards.success))
    expect(CardFingerprint.derive(key, "k1").of(a)).toBe(CardFingerprint.derive(key, "k1").of(a))
    expect(CardFingerprint.derive(key, "k1").of(a)).not.toBe(CardFingerprint.make(key, "k1").of(a))
    expect(CardFingerprint.equals("ab", "ab")).toBe(true)
    expect(CardFingerprint.equals("ab", "ac")).toBe(false)
    expect(CardFingerprint.equals("ab", "abc")).toBe(false)
  })
})
