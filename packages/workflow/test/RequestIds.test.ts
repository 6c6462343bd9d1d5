import { assert, expect, layer } from "@effect/vitest"
import { Card } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Exit, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { CardCipher, DurableQuotes, QuoteWorkflow, RequestIds } from "../src/index.js"
import { card, dataKey, dumpTables, quotesLayer, sandbox, tempDatabase, withQuotes } from "./fixtures.js"

const { Cards } = TestData

/** What the sandbox recorded for a requestId: its transactions and its POSTs. */
const sentFor = (requestId: string) =>
  Effect.flatMap(Sandbox.SandboxServer, (server) => server.journal).pipe(
    Effect.map((journal) => ({
      transactions: journal.transactionsByRequestId[requestId] ?? [],
      posts: journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId).length
    }))
  )

layer(sandbox(), { excludeTestServices: true })("DurableQuotes: a requestId belongs to one card", (it) => {
  it.effect("the same card again is the same quote; another card is RequestIdConflict, naming no card, with no POST", () =>
    withQuotes()(Effect.gen(function*() {
      const quotes = yield* DurableQuotes.DurableQuotes
      const requestId = "reqid-conflict-1"
      const quote = yield* quotes.execute(card(Cards.success), { requestId })
      expect(yield* quotes.submit(card(Cards.success), { requestId })).toBe(requestId)
      expect((yield* quotes.execute(card(Cards.success), { requestId })).transactionId).toBe(quote.transactionId)
      const other = card(Cards.instant, "4321")
      const refused = [
        yield* Effect.flip(quotes.submit(other, { requestId })),
        yield* Effect.flip(quotes.execute(other, { requestId }))
      ]
      for (const error of refused) {
        assert(error._tag === "RequestIdConflict")
        expect(error.requestId).toBe(requestId)
        expect(error.message).not.toContain(other.cardNumber)
        expect(error.message).not.toContain(Cards.success)
      }
      // the same number with another PIN, or under another product line, is another card
      const otherPin = yield* Effect.flip(quotes.submit(card(Cards.success, "9999"), { requestId }))
      expect(otherPin._tag).toBe("RequestIdConflict")
      const otherLine = yield* Effect.flip(
        quotes.submit({ ...card(Cards.success), productLineId: "2000" }, { requestId })
      )
      expect(otherLine._tag).toBe("RequestIdConflict")
      // the first card's quote stands, with its one transaction and one POST
      expect((yield* quotes.result(requestId)).transactionId).toBe(quote.transactionId)
      expect(yield* sentFor(requestId)).toEqual({ transactions: [quote.transactionId], posts: 1 })
    })))

  it.effect("a poisoned requestId does not stand: a run with a fake sealed card under it leaves the genuine quote free", () =>
    withQuotes()(Effect.gen(function*() {
      const quotes = yield* DurableQuotes.DurableQuotes
      const requestId = "reqid-poison-1"
      const fake = new CardCipher.SealedCard({
        masked: "****0001",
        productLineId: TestData.defaultProductLineId,
        sealed: Buffer.concat([Buffer.of(2), Crypto.randomBytes(40)]).toString("base64")
      })
      // What a caller of the cluster's protocol could send: a `run` under the execution id effect/workflow
      // derives from the requestId, and under a random one, neither submitted through DurableQuotes.
      const derived = yield* QuoteWorkflow.QuoteWorkflow.executionId({ requestId, card: fake })
      for (const executionId of [derived, Crypto.randomBytes(16).toString("hex")]) {
        const poisoned = yield* Effect.exit(QuoteWorkflow.execute({ requestId, card: fake }, executionId))
        assert(Exit.isFailure(poisoned))
      }
      // The requestId was never recorded: no outcome under it, and the genuine quote completes.
      expect((yield* Effect.flip(quotes.result(requestId)))._tag).toBe("QuoteNotFound")
      const quote = yield* quotes.execute(card(Cards.success), { requestId })
      expect((yield* quotes.result(requestId)).transactionId).toBe(quote.transactionId)
      expect(yield* sentFor(requestId)).toEqual({ transactions: [quote.transactionId], posts: 1 })
    })))

  it.effect("a requestId freed after its card could not be opened: any card when never POSTed, its own card once POSTed", () =>
    withQuotes()(Effect.gen(function*() {
      const requestIds = yield* RequestIds.RequestIds.pipe(
        Effect.provide(RequestIds.layer.pipe(Layer.provide(CardCipher.layer(dataKey)))),
        Effect.orDie
      )
      const [first, other] = yield* Effect.orDie(
        Effect.all([Card.validate(card(Cards.success)), Card.validate(card(Cards.instant, "4321"))])
      )
      // never POSTed: freed for any card
      const unsent = yield* Effect.orDie(requestIds.register("reqid-freed-1", first))
      yield* Effect.orDie(requestIds.release("reqid-freed-1", unsent))
      const taken = yield* Effect.orDie(requestIds.register("reqid-freed-1", other))
      expect(taken).not.toBe(unsent)
      // POSTed once: the service would answer another card with this card's transaction
      const sent = yield* Effect.orDie(requestIds.register("reqid-freed-2", first))
      expect(yield* Effect.orDie(requestIds.nextAttempt("reqid-freed-2", sent))).toEqual(Option.some(0))
      yield* Effect.orDie(requestIds.release("reqid-freed-2", sent))
      const refused = yield* Effect.flip(requestIds.register("reqid-freed-2", other))
      assert(refused._tag === "RequestIdConflict")
      // its own card takes it again, and counts its attempts on
      const again = yield* Effect.orDie(requestIds.register("reqid-freed-2", first))
      expect(again).not.toBe(sent)
      expect(yield* Effect.orDie(requestIds.nextAttempt("reqid-freed-2", again))).toEqual(Option.some(1))
    })))

  it.effect("a run not recorded for its requestId sends no POST, even with a card sealed here (a replayed run)", () =>
    withQuotes()(Effect.gen(function*() {
      const quotes = yield* DurableQuotes.DurableQuotes
      const cipher = yield* CardCipher.CardCipher.pipe(Effect.provide(CardCipher.layer(dataKey)))
      const requestId = "reqid-replayed-1"
      const quote = yield* quotes.execute(card(Cards.success), { requestId })
      const sealed = yield* cipher.seal(yield* Effect.orDie(Card.validate(card(Cards.success))), requestId)
      // the genuine payload, run under an execution id that is not the one recorded: its outcome is not read back
      const replayed = yield* Effect.flip(
        QuoteWorkflow.execute({ requestId, card: sealed }, Crypto.randomBytes(16).toString("hex"))
      )
      expect(replayed._tag).toBe("RequestIdConflict")
      expect(yield* sentFor(requestId)).toEqual({ transactions: [quote.transactionId], posts: 1 })
    })))

  it.effect("key rotation: a requestId recorded under the previous key is still compared; under a key gone, refused", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const filename = yield* tempDatabase
      const beforeKey = CardCipher.generateKey()
      const requestId = "reqid-rotation-1"
      const run = <A, E>(
        key: string,
        previousKey: string | undefined,
        effect: Effect.Effect<A, E, DurableQuotes.DurableQuotes>
      ) =>
        effect.pipe(
          Effect.provide(
            quotesLayer(server, filename, { key, ...(previousKey === undefined ? {} : { previousKey }) }),
            { local: true }
          ),
          Effect.scoped
        )
      const quote = yield* run(
        beforeKey,
        undefined,
        Effect.flatMap(DurableQuotes.DurableQuotes, (quotes) => quotes.execute(card(Cards.success), { requestId }))
      )
      const rotated = CardCipher.generateKey()
      const [same, other] = yield* run(
        rotated,
        beforeKey,
        Effect.gen(function*() {
          const quotes = yield* DurableQuotes.DurableQuotes
          return [
            yield* quotes.execute(card(Cards.success), { requestId }),
            yield* Effect.flip(quotes.submit(card(Cards.instant), { requestId }))
          ] as const
        })
      )
      expect(same.transactionId).toBe(quote.transactionId)
      expect(other._tag).toBe("RequestIdConflict")
      // two rotations later the fingerprint cannot be compared: refused, never taken for another card's
      const gone = yield* run(
        CardCipher.generateKey(),
        rotated,
        Effect.flip(
          Effect.flatMap(DurableQuotes.DurableQuotes, (quotes) => quotes.submit(card(Cards.success), { requestId }))
        )
      )
      expect(gone._tag).toBe("RequestIdConflict")
      expect(yield* sentFor(requestId)).toEqual({ transactions: [quote.transactionId], posts: 1 })
    }).pipe(Effect.scoped))

  it.effect("the database holds a fingerprint of the card, never the card, and no execution id derived from the requestId", () =>
    withQuotes()(
      Effect.gen(function*() {
        const quotes = yield* DurableQuotes.DurableQuotes
        const sentinel = {
          cardNumber: "6006000000977331",
          pinNumber: "8642",
          productLineId: TestData.defaultProductLineId
        }
        const requestId = "reqid-sentinel-1"
        yield* quotes.execute(sentinel, { requestId })
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<
          { readonly fingerprint: string; readonly execution_id: string; readonly key_id: string }
        >`
        SELECT fingerprint, execution_id, key_id FROM ${sql(RequestIds.table)} WHERE request_id = ${requestId}`
        expect(rows.length).toBe(1)
        expect(rows[0]!.fingerprint).toMatch(/^[0-9a-f]{64}$/)
        expect(rows[0]!.key_id).toBe(CardCipher.keyId(Result.getOrThrow(CardCipher.parseKey(dataKey))))
        const derived = yield* QuoteWorkflow.QuoteWorkflow.executionId({
          requestId,
          card: new CardCipher.SealedCard({ masked: "", productLineId: "", sealed: "" })
        })
        expect(rows[0]!.execution_id).not.toBe(derived)
        const { text } = yield* dumpTables
        expect(text).toContain(RequestIds.table)
        expect(text).not.toContain(sentinel.cardNumber)
        expect(text).not.toMatch(/"pinNumber"|8642"/)
      }).pipe(Effect.orDie)
    ))
})
