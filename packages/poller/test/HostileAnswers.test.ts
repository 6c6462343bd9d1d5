/**
 * Issue 15, items 3 and 4, over real HTTP: a broken optional hint does not
 * sink a quote (it is dropped and logged once), and impossible money ends the
 * quote with `UnexpectedResponse`.
 */
import { describe, expect, it } from "@effect/vitest"
import { BigDecimal, Effect, Logger, References } from "effect"
import { QuotePoller } from "../src/index.js"
import {
  card,
  completedQuote,
  json,
  optionsFor,
  pendingQuote,
  pollerLayer,
  requestsOf,
  server,
  service
} from "./hostile.js"

/** A JSON text of `template` with `field` written as the raw JSON `raw` (so that `1e400` arrives as sent). */
const withRaw = (template: Record<string, unknown>, field: string, raw: string) =>
  JSON.stringify({ ...template, [field]: "__RAW__" }).replace("\"__RAW__\"", raw)

/** A transaction status around a quote given as JSON text. */
const statusText = (quoteText: string) => `{"percentComplete":100,"steps":[],"response":${quoteText}}`

/** Collects the log lines (message and annotations) of the effect it is provided to. */
const capturingLogs = (lines: Array<{ readonly message: string; readonly field: unknown }>) =>
  Logger.layer([
    Logger.make(({ fiber, message }) => {
      lines.push({ message: String(message), field: fiber.getRef(References.CurrentLogAnnotations).field })
    })
  ])

const brokenHints: ReadonlyArray<readonly [field: string, raw: string]> = [
  ["expectedCompletionTime", "\"NaN\""],
  ["expectedCompletionTime", "1e400"],
  ["percentComplete", "\"half\""],
  ["responseTimestamp", "\"yesterday\""]
]

describe("a broken optional hint does not sink the quote", () => {
  for (const [field, raw] of brokenHints) {
    it.live(`a 201 with ${field} ${raw}: the quote completes on one POST, the field logged once`, () =>
      Effect.gen(function*() {
        const hostile = yield* server(service({
          createQuote: (_, response) => json(response, 201, withRaw(pendingQuote, field, raw)),
          getTransaction: (_, response) => json(response, 200, statusText(withRaw(completedQuote, field, raw)))
        }))
        const lines: Array<{ readonly message: string; readonly field: unknown }> = []
        const quotes = yield* Effect.flatMap(
          QuotePoller.QuotePoller,
          (poller) => Effect.all([poller.getQuote(card), poller.getQuote(card)])
        ).pipe(
          Effect.provide(pollerLayer(optionsFor(hostile.url))),
          Effect.provide(capturingLogs(lines))
        )
        expect(quotes.map((quote) => BigDecimal.format(quote.actualCardValue))).toEqual(["100.5", "100.5"])
        expect(requestsOf(hostile, "createQuote").length).toBe(2)
        const warnings = lines.filter((line) => line.message.includes("cannot be read"))
        // once per field and client, though both POSTs and both GETs carried it
        expect(warnings.map((line) => line.field).sort()).toEqual([field, `response.${field}`].sort())
        expect(JSON.stringify(lines)).not.toContain(raw.replaceAll("\"", ""))
      }).pipe(Effect.scoped))
  }
})

const impossibleMoney: ReadonlyArray<string> = ["-12.5", "\"-0\"", "\"1e-50000000\"", "1234567890123", "0.00001"]

describe("impossible money is an UnexpectedResponse", () => {
  for (const raw of impossibleMoney) {
    it.live(`actualCardValue ${raw} ends the quote with UnexpectedResponse`, () =>
      Effect.gen(function*() {
        const hostile = yield* server(service({
          getTransaction: (_, response) =>
            json(response, 200, statusText(withRaw(completedQuote, "actualCardValue", raw)))
        }))
        const error = yield* Effect.flatMap(QuotePoller.QuotePoller, (poller) => Effect.flip(poller.getQuote(card)))
          .pipe(
            Effect.provide(pollerLayer(optionsFor(hostile.url), undefined, { schedule: { initialDelay: "1 millis" } }))
          )
        expect(error._tag).toBe("UnexpectedResponse")
        expect(error.message).toContain("actualCardValue")
      }).pipe(Effect.scoped))
  }
})
