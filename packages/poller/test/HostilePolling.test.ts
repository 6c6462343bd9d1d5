/**
 * Issue 15, items 6, 7 and 17 (library part), over real HTTP: the poller
 * waits for `Retry-After`, revoked credentials end a quote with
 * `Unauthorized` (its journal entry kept), and the POST's retries show up as
 * `Retrying` events whose attempt numbers never restart.
 */
import { describe, expect, it } from "@effect/vitest"
import type { QuoteEvent } from "@gcx/core"
import { Duration, Effect, Stream } from "effect"
import { QuoteJournal, QuotePoller } from "../src/index.js"
import {
  card,
  completedQuote,
  json,
  optionsFor,
  pendingQuote,
  pollerLayer,
  requestsOf,
  server,
  service,
  status,
  transactionId
} from "./hostile.js"

/** Answers the n-th request of a route with `answers[n]` (the last one repeating). */
const inTurn = (answers: ReadonlyArray<readonly [status: number, body: unknown, headers?: Record<string, string>]>) => {
  let made = 0
  return (_: unknown, response: Parameters<typeof json>[0]) => {
    const [code, body, headers] = answers[Math.min(made++, answers.length - 1)]!
    json(response, code, body, headers)
  }
}

const quoteEvents = Effect.flatMap(QuotePoller.QuotePoller, (poller) => Stream.runCollect(poller.quote(card)))

const retries = (events: ReadonlyArray<QuoteEvent.QuoteEvent>) =>
  events.flatMap((event) => event._tag === "Retrying" ? [event] : [])

const unavailable = { ErrorCode: "Error", Message: "unavailable" }

describe("polling a hostile service", () => {
  it.live("a GET answering 503 with Retry-After: 1 is not polled again for at least a second", () =>
    Effect.gen(function*() {
      const hostile = yield* server(service({
        getTransaction: inTurn([[503, unavailable, { "retry-after": "1" }], [200, status(completedQuote)]])
      }))
      const started = performance.now()
      // no retry in the client: the poller alone decides when the next GET goes
      const events = yield* quoteEvents.pipe(
        Effect.provide(pollerLayer(optionsFor(hostile.url, { retry: { maxAttempts: 1 } })))
      )
      expect(performance.now() - started).toBeGreaterThanOrEqual(1000)
      expect(events.at(-1)?._tag).toBe("Completed")
      expect(retries(events).map((event) => Duration.toMillis(event.delay))).toEqual([1000])
      expect(requestsOf(hostile, "getTransaction").length).toBe(2)
    }).pipe(Effect.scoped))

  it.live("a GET always answering 401 ends the quote with Unauthorized after two failed recoveries", () =>
    Effect.gen(function*() {
      const hostile = yield* server(service({ getTransaction: inTurn([[401, {}]]) }))
      const { entries, events } = yield* Effect.gen(function*() {
        const events = yield* quoteEvents
        const entries = yield* Effect.flatMap(QuoteJournal.QuoteJournal, (journal) => journal.entries)
        return { events, entries }
      }).pipe(Effect.provide(pollerLayer(optionsFor(hostile.url, { minTokenInterval: "10 millis" }))))
      const last = events.at(-1)
      expect(last?._tag === "Failed" && last.error._tag).toBe("Unauthorized")
      // two GET calls, each with its one 401 recovery; every refused token is dropped, so each attempt fetched one
      expect(requestsOf(hostile, "getTransaction").length).toBe(4)
      expect(requestsOf(hostile, "token").length).toBe(4)
      // kept for a resume once the credentials are fixed
      expect(entries.map((entry) => entry.transactionId)).toEqual([transactionId])
    }).pipe(Effect.scoped))

  it.live("a POST retried after a 503 shows a Retrying event before Submitted, naming its requestId", () =>
    Effect.gen(function*() {
      const hostile = yield* server(service({
        createQuote: inTurn([[503, unavailable], [201, pendingQuote]])
      }))
      const events = yield* quoteEvents.pipe(Effect.provide(pollerLayer(optionsFor(hostile.url))))
      expect(events.map((event) => event._tag)).toEqual(["Retrying", "Submitted", "Progress", "Completed"])
      const [retrying, submitted] = events
      expect(retrying).toMatchObject({ attempt: 2, transactionId: "", reason: "ServiceUnavailable (HTTP 503)" })
      expect(retrying?._tag === "Retrying" && retrying.requestId).toBe(
        submitted?._tag === "Submitted" && submitted.requestId
      )
      const posts = requestsOf(hostile, "createQuote").map((request) => request.headers.previousattempts)
      expect(posts).toEqual(["0", "1"])
    }).pipe(Effect.scoped))

  it.live("attempt numbers run on from the client's retries to the poller's", () =>
    Effect.gen(function*() {
      const hostile = yield* server(service({
        getTransaction: inTurn([[503, unavailable], [503, unavailable], [503, unavailable], [
          200,
          status(completedQuote)
        ]])
      }))
      const events = yield* quoteEvents.pipe(
        Effect.provide(pollerLayer(optionsFor(hostile.url, { retry: { maxAttempts: 2, baseDelay: "1 millis" } })))
      )
      expect(events.at(-1)?._tag).toBe("Completed")
      // the client's retry (2), the poller's (3), the client's again within the next GET call (4)
      expect(retries(events).map((event) => event.attempt)).toEqual([2, 3, 4])
    }).pipe(Effect.scoped))
})
