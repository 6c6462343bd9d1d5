/**
 * Fuzz, client side: 10,000 malformed card inputs (missing fields, wrong
 * types, empty or blank values, values over 64 characters, control
 * characters, wrong shapes, `Redacted` wrappers around any of these) through
 * `ExchangeClient.createQuote`, `QuotePoller.getQuote` and `QuotePoller.quote`
 * against a real sandbox process. Every one must fail with `InvalidCardInput`
 * (never echoing a value), and no request may reach the sandbox: its journal
 * stays empty.
 */
import { describe, expect, it } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import { QuotePoller } from "@gcx/poller"
import { Cause, Effect, Exit, Option, Redacted, Stream } from "effect"
import * as fc from "fast-check"
import * as Admin from "../internal/Admin.js"
import { pollerLayer } from "../internal/gcx.js"
import { sandboxProcess } from "./sandbox.js"

const runs = 10_000
const seed = 7_331

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_."
const visible = fc.string({ unit: fc.constantFrom(...alphabet), minLength: 1, maxLength: 64 })

/** Characters that `String.prototype.trim` removes. */
const blank = fc.string({
  unit: fc.constantFrom(" ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u2003", "\u3000", "\ufeff", "\u2028"),
  maxLength: 8
})

const control = fc.oneof(
  fc.integer({ min: 0, max: 0x1f }),
  fc.integer({ min: 0x7f, max: 0x9f }),
  fc.constantFrom(0x2028, 0x2029)
).map((code) => String.fromCharCode(code))

/** A string value the validation must refuse. */
const badString = fc.oneof(
  blank,
  fc.string({ unit: fc.constantFrom(...alphabet), minLength: 65, maxLength: 400 }),
  fc.tuple(visible, control, visible).map(([before, character, after]) => `${before}${character}${after}`),
  fc.tuple(blank, fc.string({ unit: fc.constantFrom(...alphabet), minLength: 65, maxLength: 100 }), blank).map(
    ([before, long, after]) => `${before}${long}${after}`
  )
)

/** A field value the validation must refuse; `undefined` leaves the field out. */
const badField: fc.Arbitrary<unknown> = fc.oneof(
  badString,
  badString.map((value) => Redacted.make(value)),
  fc.constant(undefined),
  fc.constant(null),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.bigInt(),
  fc.array(fc.anything(), { maxLength: 3 }),
  fc.object({ maxDepth: 1 }),
  fc.constant(Redacted.make(42))
)

const goodField = fc.oneof(visible, visible.map((value) => Redacted.make(value)))

const fields = ["cardNumber", "pinNumber", "productLineId"] as const

/** A card object with at least one refused field. */
const badCard = fc.tuple(
  fc.integer({ min: 1, max: 7 }),
  fc.tuple(goodField, goodField, goodField),
  fc.tuple(badField, badField, badField)
).map(([mask, good, bad]) => {
  const card: Record<string, unknown> = {}
  fields.forEach((field, index) => {
    const value = (mask & (1 << index)) !== 0 ? bad[index] : good[index]
    if (value !== undefined) card[field] = value
  })
  return card
})

/** What a caller may hand in: a bad card object, the same inside `{ card }`, or not an object at all. */
const badInput: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: badCard },
  { weight: 2, arbitrary: badCard.map((card) => ({ card })) },
  {
    weight: 1,
    arbitrary: fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.array(fc.string()), fc.constant({}))
  }
)

/** The string values of an input that are long enough that an echo could not be a coincidence. */
const echoable = (input: unknown): Array<string> => {
  const record = typeof input === "object" && input !== null ? input as Record<string, unknown> : {}
  const card = typeof record.card === "object" && record.card !== null ? record.card as Record<string, unknown> : record
  return fields.map((field) => card[field]).map((value) => Redacted.isRedacted(value) ? Redacted.value(value) : value)
    .filter((value): value is string => typeof value === "string" && value.trim().length >= 10)
    .map((value) => value.trim())
}

describe(`fuzz: ${runs.toLocaleString("en-US")} malformed card inputs`, () => {
  const sandbox = sandboxProcess()

  it.live(
    "each fails with InvalidCardInput before any I/O: no request reaches the sandbox",
    () =>
      Effect.gen(function*() {
        const { endpoint } = sandbox.get()
        const client = yield* ExchangeClient.ExchangeClient
        const poller = yield* QuotePoller.QuotePoller
        const inputs = fc.sample(badInput, { numRuns: runs, seed })
        const started = performance.now()
        const results = yield* Effect.forEach(inputs, (input, index) => {
          const call: Effect.Effect<unknown, { readonly _tag: string }> = index % 3 === 0
            ? client.createQuote(input as QuotePoller.QuoteInput)
            : index % 3 === 1
            ? poller.getQuote(input as QuotePoller.QuoteInput)
            : Stream.runCollect(poller.quote(input as QuotePoller.QuoteInput))
          return Effect.exit(call).pipe(Effect.map((exit) => ({ index, input, exit })))
        })
        const seconds = (performance.now() - started) / 1000
        const refused = results.filter(({ exit }) =>
          Exit.isFailure(exit) &&
          Option.exists(Cause.findErrorOption(exit.cause), (error) => error._tag === "InvalidCardInput")
        )
        const journal = yield* Effect.promise(() => Admin.journal(endpoint))
        console.log(
          `card-input fuzz: ${runs} inputs in ${
            seconds.toFixed(1)
          } s (seed ${seed}): ${refused.length} InvalidCardInput; ` +
            `sandbox saw ${journal.requests.token} token, ${journal.requests.createQuote} createQuote, ` +
            `${journal.requests.getTransaction} getTransaction requests`
        )
        const other = results.filter((result) => !refused.includes(result))
        expect(other.map(({ exit, index }) => `#${index}: ${String(exit)}`).slice(0, 5)).toEqual([])
        const echoes = refused.filter(({ exit, input }) => {
          const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined
          const text = `${String(error)} ${JSON.stringify(error)}`
          return echoable(input).some((value) => text.includes(value))
        })
        expect(echoes.map(({ index }) => index)).toEqual([])
        expect(journal.requests.token).toBe(0)
        expect(journal.requests.createQuote).toBe(0)
        expect(journal.requests.getTransaction).toBe(0)
        expect(journal.requests.heartbeat).toBe(0)
        // the journal does count: one valid card reaches the sandbox
        yield* client.createQuote({ cardNumber: "6006000000000019", pinNumber: "1234", productLineId: "1000" })
        const after = yield* Effect.promise(() => Admin.journal(endpoint))
        expect(after.requests.createQuote).toBe(1)
      }).pipe(Effect.provide(pollerLayer(sandbox.get().endpoint))),
    300_000
  )
})
