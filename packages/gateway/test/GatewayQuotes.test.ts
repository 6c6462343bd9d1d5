/**
 * The gateway's quotes without HTTP: the id derivation of the contract, the
 * view from events, and the ownership table on SQLite (the embedded
 * deployment's file) and a throwaway PostgreSQL (a client-only deployment).
 * `DurableQuotes` and `EventLog` are stand-ins here: the quotes themselves
 * run in `Gateway.test.ts`.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Card, Errors, Ids, Quote, QuoteEvent, Transaction } from "@gcx/core"
import { CardCipher, DurableQuotes, EventLog, RequestIds } from "@gcx/workflow"
import { DateTime, Effect, Fiber, Layer, Redacted, Result, Schema, Tracer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import * as TestPg from "../../workflow/test/utils/postgres.js"
import * as GatewayQuotes from "../src/GatewayQuotes.js"
import * as Owners from "../src/internal/owners.js"
import { apiKey, sqliteInTemporaryFolder } from "./utils/layers.js"

const dataKey = CardCipher.generateKey()

describe("quote ids", () => {
  it("are HMAC-SHA-256(HKDF(data key, 'gcx gateway request id'), keyId + newline + Idempotency-Key), 32 hex", () => {
    const bytes = Buffer.from(dataKey, "base64")
    const k = Buffer.from(Crypto.hkdfSync("sha256", bytes, new Uint8Array(0), "gcx gateway request id", 32))
    const derive = GatewayQuotes.requestIds(Redacted.make(new Uint8Array(k)))
    const expected = Crypto.createHmac("sha256", k).update("key_a\norder-1").digest("hex").slice(0, 32)
    expect(derive("key_a", "order-1")).toBe(Ids.breakDigitRuns(expected))
    expect(derive("key_a", "order-1")).toBe(derive("key_a", "order-1"))
    expect(derive("key_b", "order-1")).not.toBe(derive("key_a", "order-1"))
  })

  it("never hold 8 digits in a row, and are valid requestIds", () => {
    const derive = GatewayQuotes.requestIds(Redacted.make(new Uint8Array(Crypto.randomBytes(32))))
    for (let n = 0; n < 2000; n++) {
      const id = derive("key_a", `order-${n}`)
      expect(id).toMatch(/^[0-9a-f]{32}$/)
      expect(id).not.toMatch(/\d{8}/)
      expect(Schema.is(Ids.RequestId)(id)).toBe(true)
    }
  })
})

describe("the view of a quote", () => {
  const timestamp = DateTime.makeUnsafe(0)
  const entries = (events: ReadonlyArray<QuoteEvent.QuoteEvent>): ReadonlyArray<EventLog.Entry> =>
    events.map((event, index) => ({ seq: index + 1, event }))
  const submitted = new QuoteEvent.Submitted({ transactionId: "T1", timestamp, requestId: "r", percentComplete: 5 })
  const progress = new QuoteEvent.Progress({
    transactionId: "T1",
    timestamp,
    percentComplete: 60,
    steps: [
      new Transaction.Step({
        descriptionTag: "exchange.vault.credit.card",
        isCompleted: true,
        completionTime: timestamp
      }),
      new Transaction.Step({ descriptionTag: "exchange.svc.fraud.check", isCompleted: false })
    ]
  })

  it("pending: the last progress's percentage and steps", () => {
    expect(GatewayQuotes.viewOf("q", [])).toMatchObject({ status: "pending", percentComplete: 0, steps: [] })
    expect(GatewayQuotes.viewOf("q", entries([submitted]))).toMatchObject({ percentComplete: 5 })
    expect(GatewayQuotes.viewOf("q", entries([submitted, progress]))).toEqual({
      id: "q",
      status: "pending",
      percentComplete: 60,
      steps: [
        { descriptionTag: "exchange.vault.credit.card", isCompleted: true, completionTime: "1970-01-01T00:00:00.000Z" },
        { descriptionTag: "exchange.svc.fraud.check", isCompleted: false }
      ],
      links: { self: "/v1/quotes/q", events: "/v1/quotes/q/events" }
    })
  })

  it("failed: the error's code, group and userMessage, never its service message", () => {
    const error = new Errors.CardValueOutOfRange({
      message: "service text 6006000000000001",
      userMessage: "This card has no value",
      errorCode: "exchange.card.value.out.of.range",
      httpStatus: 400
    } as never)
    const failed = new QuoteEvent.Failed({ transactionId: "T1", timestamp, error })
    const view = GatewayQuotes.viewOf("q", entries([submitted, progress, failed]))
    expect(view).toMatchObject({ status: "failed", percentComplete: 60 })
    expect(view.error).toEqual({ code: "CardValueOutOfRange", group: "card", userMessage: "This card has no value" })
    expect(JSON.stringify(view)).not.toContain("6006000000000001")
    expect(view.outcome).toBeUndefined()
  })

  it("completed: 100 % and the values as decimal strings", () => {
    const quote = Schema.decodeUnknownSync(Quote.CompletedQuote)({
      transactionId: "T1",
      actualCardValue: "85",
      exchangeCardValue: "80.5"
    })
    const completed = new QuoteEvent.Completed({ transactionId: "T1", timestamp, quote })
    const view = GatewayQuotes.viewOf("q", entries([submitted, completed]))
    expect(view).toMatchObject({
      status: "completed",
      percentComplete: 100,
      outcome: { transactionId: "T1", actualCardValue: "85.00", exchangeCardValue: "80.50" }
    })
  })
})

/** `DurableQuotes` that records every submit, and `EventLog` with nothing in it (calling `onRead` at each read). */
const standIns = (submitted: Array<string>, onRead: () => void = () => {}) =>
  Layer.mergeAll(
    Layer.succeed(
      DurableQuotes.DurableQuotes,
      DurableQuotes.DurableQuotes.of({
        submit: (_, options) => Effect.sync(() => (submitted.push(options!.requestId!), options!.requestId!))
      } as Partial<DurableQuotes.Service> as DurableQuotes.Service)
    ),
    Layer.succeed(EventLog.EventLog, EventLog.EventLog.of({ read: () => Effect.sync(() => (onRead(), [])) } as never))
  )

/** Runs `effect` with a tracer that keeps its spans in `spans`. */
const tracing = <A, E, R>(spans: Array<Tracer.Span>, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.tracer, (native) =>
    Effect.withTracer(
      effect,
      Tracer.make({
        ...native,
        span(options) {
          const span = native.span(options)
          spans.push(span)
          return span
        }
      })
    ))

const { layer: sqlite } = sqliteInTemporaryFolder("gcx-gateway-quotes-")
const postgres = TestPg.layerClient.pipe(Layer.provide(TestPg.layer()), Layer.orDie)

/** The requestIds table, as the real `DurableQuotes` creates it (a stand-in here). */
const requestIdsTable = Effect.provide(RequestIds.make, CardCipher.layer(dataKey))

const suite = (name: string, database: Layer.Layer<SqlClient.SqlClient>) =>
  layer(database, { excludeTestServices: true, timeout: 120_000 })(`ownership on ${name}`, (it) => {
    it.effect("a quote is its submitter's; another key's and an unknown id are not found; a resubmit is one row", () =>
      Effect.gen(function*() {
        yield* requestIdsTable
        const submitted: Array<string> = []
        const key = Result.getOrThrow(CardCipher.parseKey(dataKey))
        const quotes = yield* Effect.provide(GatewayQuotes.make(key), standIns(submitted), { local: true })
        const a = apiKey("key_a")
        const b = apiKey("key_b")
        const input = yield* Effect.fromResult(
          Card.validateResult({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" })
        )
        const first = yield* quotes.submit(a, "order-1", input)
        const again = yield* quotes.submit(a, "order-1", input)
        expect(again).toEqual(first)
        expect(submitted).toEqual([first.id, first.id])
        yield* quotes.owned(a, first.id)
        expect((yield* Effect.flip(quotes.owned(b, first.id))).error.code).toBe("not_found")
        expect((yield* Effect.flip(quotes.view(b, first.id))).error.code).toBe("not_found")
        expect((yield* Effect.flip(quotes.owned(a, "ab".repeat(16)))).error.code).toBe("not_found")
        expect(yield* quotes.view(a, first.id)).toMatchObject({ id: first.id, status: "pending" })
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ readonly key_id: string }>`SELECT key_id FROM gcx_gateway_quotes`
        expect(rows.map((row) => row.key_id)).toEqual(["key_a"])
      }))

    it.effect("concurrent POSTs are recorded together: each its caller's, one row per id, a failed write fails each", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* requestIdsTable
        const submitted: Array<string> = []
        let reads = 0
        const key = Result.getOrThrow(CardCipher.parseKey(dataKey))
        const quotes = yield* Effect.provide(GatewayQuotes.make(key), standIns(submitted, () => reads++), {
          local: true
        })
        const input = yield* Effect.fromResult(
          Card.validateResult({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" })
        )
        const callers = [apiKey("key_c"), apiKey("key_d")]
        const posts = Array.from({ length: 40 }, (_, index) => ({ caller: callers[index % 2]!, key: `order-${index}` }))
        // the same caller and Idempotency-Key twice at once: one quote, and the second is a replay
        const twice = [{ caller: callers[0]!, key: "order-twice" }, { caller: callers[0]!, key: "order-twice" }]
        const spans: Array<Tracer.Span> = []
        const accepted = yield* tracing(
          spans,
          Effect.forEach([...posts, ...twice], ({ caller, key }) => quotes.submit(caller, key, input), {
            concurrency: "unbounded"
          })
        )
        // written in batches, not one statement a POST: every POST in one of them
        const batches = spans.filter((span) => span.name === Owners.spanName)
        expect(batches.length).toBeGreaterThan(0)
        expect(batches.length).toBeLessThan(accepted.length)
        expect(batches.reduce((sum, span) => sum + Number(span.attributes.get("batchSize")), 0)).toBe(accepted.length)
        expect(accepted.slice(40)[0]!.id).toBe(accepted.slice(40)[1]!.id)
        // a replay reads the quote's status from its events; a new quote is pending without a read
        expect(reads).toBe(1)
        const rows = yield* sql<{ readonly request_id: string; readonly key_id: string }>`SELECT request_id, key_id
          FROM ${sql(GatewayQuotes.table)} WHERE key_id IN ('key_c', 'key_d')`
        expect(rows).toHaveLength(41)
        const owners = new Map(rows.map((row) => [row.request_id, row.key_id]))
        for (const [index, { caller, key }] of posts.entries()) {
          expect(accepted[index]!.id).toBe(quotes.requestId(caller.id, key))
          expect(owners.get(accepted[index]!.id)).toBe(caller.id)
          const other = callers.find((candidate) => candidate !== caller)!
          expect((yield* Effect.flip(quotes.owned(other, accepted[index]!.id))).error.code).toBe("not_found")
        }

        // a POST interrupted before its batch runs leaves no row; the others of the moment are recorded
        const [kept, dropped, alsoKept] = yield* Effect.forEach(
          ["order-i1", "order-i2", "order-i3"],
          (key) => Effect.forkChild(quotes.submit(callers[1]!, key, input))
        )
        yield* Fiber.interrupt(dropped!)
        const recorded = [yield* Fiber.join(kept!), yield* Fiber.join(alsoKept!)].map((accepted) => accepted.id)
        const found = yield* sql<{ readonly request_id: string }>`SELECT request_id FROM ${sql(GatewayQuotes.table)}
          WHERE request_id IN (${recorded[0]!}, ${recorded[1]!}, ${quotes.requestId("key_d", "order-i2")})`
        expect(found.map((row) => row.request_id).sort()).toEqual([...recorded].sort())

        // the table gone: every POST of the batch is answered 503, and none is submitted
        const before = submitted.length
        yield* sql`ALTER TABLE ${sql(GatewayQuotes.table)} RENAME TO gcx_gateway_quotes_away`
        const failed = yield* Effect.forEach(
          ["order-x", "order-y", "order-z"],
          (key) => Effect.flip(quotes.submit(callers[1]!, key, input)),
          { concurrency: "unbounded" }
        ).pipe(
          Effect.ensuring(Effect.orDie(sql`ALTER TABLE gcx_gateway_quotes_away RENAME TO ${sql(GatewayQuotes.table)}`))
        )
        expect(failed.map((error) => error.error.code)).toEqual(["unavailable", "unavailable", "unavailable"])
        expect(submitted).toHaveLength(before)
        yield* sql`DELETE FROM ${sql(GatewayQuotes.table)} WHERE key_id IN ('key_c', 'key_d')`
        yield* sql`DELETE FROM ${sql(RequestIds.table)}`
      }))

    it.effect("a rotation keeps a retried POST on its quote; a database of an unknown data key refuses to start", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* requestIdsTable
        const old = Result.getOrThrow(CardCipher.parseKey(CardCipher.generateKey()))
        const current = Result.getOrThrow(CardCipher.parseKey(CardCipher.generateKey()))
        const submitted: Array<string> = []
        const build = (key: CardCipher.DataKey, previous?: CardCipher.DataKey) =>
          Effect.provide(GatewayQuotes.make(key, previous), standIns(submitted), { local: true })
        const input = yield* Effect.fromResult(
          Card.validateResult({ cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" })
        )
        const a = apiKey("key_r")
        const before = yield* (yield* build(old)).submit(a, "order-r", input)
        // recorded under the old key, as DurableQuotes records it
        yield* sql`INSERT INTO ${sql(RequestIds.table)} (request_id, execution_id, key_id, fingerprint)
          VALUES (${before.id}, ${"e".repeat(32)}, ${old.id}, ${"f".repeat(64)})`

        // neither key of the database: refused, naming the key's id only
        const refused = yield* Effect.flip(build(current))
        expect(refused._tag).toBe("UnknownDataKey")
        expect(refused.message).toBe(
          `this database's quotes were recorded under data key ${old.id}, which is neither GCX_DATA_KEY nor ` +
            "GCX_DATA_KEY_PREVIOUS: start with that key (or set it as GCX_DATA_KEY_PREVIOUS to rotate)"
        )

        // rotated: the caller's retry is the same quote; another caller, or a new Idempotency-Key, the current key's id
        const rotated = yield* build(current, old)
        expect((yield* rotated.submit(a, "order-r", input)).id).toBe(before.id)
        const other = yield* rotated.submit(apiKey("key_s"), "order-r", input)
        expect(other.id).toBe(rotated.requestId("key_s", "order-r"))
        expect(other.id).not.toBe(before.id)
        expect((yield* rotated.submit(a, "order-s", input)).id).toBe(rotated.requestId("key_r", "order-s"))
        expect(submitted).toEqual([before.id, before.id, other.id, rotated.requestId("key_r", "order-s")])
        // and a gateway started with the old key alone still starts (its key)
        yield* build(old)
        yield* sql`DELETE FROM ${sql(RequestIds.table)}`
        yield* sql`DELETE FROM ${sql(GatewayQuotes.table)} WHERE key_id IN ('key_r', 'key_s')`
      }))
  })

suite("SQLite", sqlite)
suite("PostgreSQL", postgres)
