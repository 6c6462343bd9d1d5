import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Card, Errors } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents } from "@gcx/poller"
import { Sandbox, TestData } from "@gcx/sandbox"
import {
  BigDecimal,
  Clock,
  DateTime,
  Duration,
  Effect,
  Equal,
  Exit,
  Fiber,
  Layer,
  Option,
  Queue,
  Result,
  Schedule,
  Stream
} from "effect"
import { SqlClient } from "effect/sql"
import * as Net from "node:net"
import * as Path from "node:path"
import { CardCipher, DurableQuotes, Embedded, EventLog, QuoteWorkflow, RequestIds } from "../src/index.js"
import { card, dataKey, quotesLayer, sandbox, tempDatabase, tempDirectory, withQuotes } from "./fixtures.js"
import * as TestPg from "./utils/postgres.js"

/** A data key of another deployment. */
const otherKey = () => Result.getOrThrow(CardCipher.parseKey(CardCipher.generateKey()))

layer(sandbox(), { excludeTestServices: true })("DurableQuotes (embedded, SQLite)", (it) => {
  it.effect("execute: a quote completes through the workflow, with one transaction for its requestId", () =>
    withQuotes()(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      const quote = yield* quotes.execute(card(TestData.Cards.success), { requestId: "durable-execute-1" })
      expect(BigDecimal.format(quote.actualCardValue)).toBe("100")
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId["durable-execute-1"]).toEqual([quote.transactionId])
    })))

  it.effect("submit returns the requestId; result awaits the outcome; a second submit records nothing new", () =>
    withQuotes()(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      const requestId = yield* quotes.submit(card(TestData.Cards.success))
      expect(requestId).toMatch(/^[0-9a-f]{32}$/)
      expect(yield* quotes.submit(card(TestData.Cards.success), { requestId })).toBe(requestId)
      const quote = yield* quotes.result(requestId)
      expect(yield* quotes.result(requestId)).toEqual(quote)
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId]).toEqual([quote.transactionId])
    })))

  it.effect("result of a requestId never submitted fails at once with QuoteNotFound, naming it and no card", () =>
    withQuotes()(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      // Another quote is recorded in the same database: only the requestId asked for is looked up.
      const known = yield* quotes.execute(card(TestData.Cards.success), { requestId: "durable-known-1" })
      const before = (yield* server.journal).requests
      const error = yield* Effect.flip(quotes.result("durable-never-submitted-1"))
      assert(error._tag === "QuoteNotFound")
      expect(error.requestId).toBe("durable-never-submitted-1")
      expect(error.message).toBe(`no durable quote was submitted with requestId "durable-never-submitted-1"`)
      expect(error.message).not.toContain(TestData.Cards.success)
      // Not a requestId at all: refused before any I/O, with the same typed error.
      const malformed = yield* Effect.flip(quotes.result("has space"))
      assert(malformed._tag === "QuoteNotFound")
      expect(malformed.requestId).toBe("has space")
      // The lookups sent nothing to the service, and the known quote is still found.
      expect((yield* server.journal).requests).toEqual(before)
      expect((yield* quotes.result("durable-known-1")).transactionId).toBe(known.transactionId)
    })))

  it.effect("a card outcome is the workflow's typed error", () =>
    withQuotes()(Effect.gen(function*() {
      const quotes = yield* DurableQuotes.DurableQuotes
      const requestId = yield* quotes.submit(card(TestData.Cards.invalid))
      const error = yield* Effect.flip(quotes.result(requestId))
      assert(error._tag === "InvalidCard")
      expect(Errors.groupOf(error)).toBe("card")
      expect(yield* Effect.flip(quotes.execute(card(TestData.Cards.invalid), { requestId }))).toEqual(error)
    })))

  it.effect("a quote the POST answers completed needs no GET", () =>
    withQuotes()(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      const quote = yield* quotes.execute(card(TestData.Cards.instant), { requestId: "durable-instant-1" })
      const journal = yield* server.journal
      expect(journal.getsByTransactionId[quote.transactionId] ?? 0).toBe(0)
    })))

  it.effect("bad input fails before any I/O", () =>
    withQuotes()(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      const before = (yield* server.journal).requests.createQuote
      const error = yield* Effect.flip(quotes.submit({ ...card(TestData.Cards.success), pinNumber: " " }))
      assert(error._tag === "InvalidCardInput")
      expect(error.field).toBe("card.pinNumber")
      const badId = yield* Effect.flip(quotes.submit(card(TestData.Cards.success), { requestId: "has space" }))
      expect(badId._tag).toBe("InvalidRequest")
      // one the service would refuse (it takes letters, digits, '-' and '_'): refused here, nothing recorded
      const refused = yield* Effect.flip(quotes.execute(card(TestData.Cards.success), { requestId: "order#43" }))
      assert(refused._tag === "InvalidRequest")
      expect(refused.message).toContain("requestId must be 1 to 64 letters, digits, '-' or '_'")
      expect((yield* Effect.flip(quotes.result("order#43")))._tag).toBe("QuoteNotFound")
      expect((yield* server.journal).requests.createQuote).toBe(before)
    })))

  it.effect("the runner's bus carries the events of the quotes it runs: Submitted, then the terminal event", () =>
    withQuotes()(
      Effect.gen(function*() {
        const bus = yield* QuoteEvents.QuoteEvents
        const quotes = yield* DurableQuotes.DurableQuotes
        const events = yield* bus.subscribe.pipe(
          Effect.flatMap((stream) =>
            stream.pipe(Stream.takeUntil((event) => event._tag === "Completed"), Stream.runCollect, Effect.forkChild)
          )
        )
        const quote = yield* quotes.execute(card(TestData.Cards.success))
        const tags = (yield* Fiber.join(events)).map((event) => event._tag)
        expect(tags[0]).toBe("Submitted")
        expect(tags.at(-1)).toBe("Completed")
        expect(quote.transactionId).toBeTypeOf("string")
      }).pipe(Effect.scoped)
    ))

  it.effect("a replayed submit counts previousAttempts on from the durable counter: the service replays, no 400", () =>
    withQuotes()(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      const requestIds = yield* RequestIds.RequestIds.pipe(
        Effect.provide(RequestIds.layer.pipe(Layer.provide(CardCipher.layer(dataKey)))),
        Effect.orDie
      )
      const client = yield* ExchangeClient.ExchangeClient
      // A run that crashed after its POST: attempt 0 taken from the counter and sent, its outcome never recorded.
      const requestId = "durable-replay-1"
      const validated = yield* Effect.orDie(Card.validate(card(TestData.Cards.success)))
      const executionId = yield* Effect.orDie(requestIds.register(requestId, validated))
      const first = yield* requestIds.nextAttempt(requestId, executionId).pipe(Effect.orDie)
      expect(first).toEqual(Option.some(0))
      // another execution id is not the quote's: no attempt for it
      expect(yield* Effect.orDie(requestIds.nextAttempt(requestId, "0".repeat(32)))).toEqual(Option.none())
      const created = yield* client.createQuote(card(TestData.Cards.success), { requestId, previousAttempts: 0 })
      // The replay: the workflow's submit takes the next attempt, and the service answers the original transaction.
      const quote = yield* quotes.execute(card(TestData.Cards.success), { requestId })
      expect(quote.transactionId).toBe(created.transactionId)
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId]).toEqual([created.transactionId])
      const sent = journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
      expect(sent.map((entry) => [entry.previousAttempts, entry.status])).toEqual([[0, 201], [1, 201]])
    })))

  it.effect("a POST whose answers are lost to the attempts cap is resumed by the workflow after its pause: the original transaction", () =>
    withQuotes({ track: { resumeDelays: ["1 second"] } })(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      // the first run of the submit activity: every attempt (4) processed, its answer lost
      yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer", times: 4 }])
      const requestId = "durable-lost-answers-1"
      const quote = yield* quotes.execute(card(TestData.Cards.success), { requestId }).pipe(
        Effect.ensuring(server.setFaults([]))
      )
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId]).toEqual([quote.transactionId])
      const sent = journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
      expect(sent.map((entry) => [entry.previousAttempts, entry.faults ?? []])).toEqual([
        [0, ["dropAnswer"]],
        [1, ["dropAnswer"]],
        [2, ["dropAnswer"]],
        [3, ["dropAnswer"]],
        [4, []]
      ])
      // the run again waited for its pause, on the engine's durable timer
      const [lost, resumed] = sent.slice(3).map((entry) => DateTime.toEpochMillis(entry.time))
      expect(resumed! - lost!).toBeGreaterThanOrEqual(1_000)
      // the quote's followers were told of each retry of the first run, then why it waited (attempt 5, the
      // pause), before the outcome
      const events = yield* Stream.unwrap(Effect.map(EventLog.EventLog, (log) => log.follow(requestId, 0))).pipe(
        Stream.map(({ event }) => event),
        Stream.filter((event) => event._tag !== "Progress" && event._tag !== "StepCompleted"),
        Stream.runCollect,
        Effect.provide(EventLog.layer()),
        Effect.orDie
      )
      expect(events.map((event) => event._tag)).toEqual([
        ...Array<string>(4).fill("Retrying"),
        "Submitted",
        "Completed"
      ])
      const retries = events.flatMap((event) => event._tag === "Retrying" ? [event] : [])
      expect(retries.map((event) => [event.requestId, event.attempt, event.reason])).toEqual(
        [2, 3, 4, 5].map((attempt) => [requestId, attempt, "TransportError"])
      )
      // the pause: its setting, up to a fifth longer at random
      expect(Duration.toMillis(retries[3]!.delay)).toBeGreaterThanOrEqual(1_000)
      expect(Duration.toMillis(retries[3]!.delay)).toBeLessThanOrEqual(1_200)
    })))

  it.effect("a quote paused before its POST is sent again survives a restart: the timer and the decision are the first process's", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const filename = yield* tempDatabase
      const requestId = "durable-lost-answers-restart"
      const options = { track: { resumeDelays: ["6 seconds"] as const } }
      const sent = Effect.map(
        server.journal,
        (journal) => journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
      )
      yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer", times: 4 }])
      // the first process: its run ends with 4 lost answers; it stops 3 s into the 6 s pause, at once (a
      // workflow waiting on a durable timer holds no activity open)
      yield* Effect.gen(function*() {
        const quotes = yield* DurableQuotes.DurableQuotes
        yield* quotes.submit(card(TestData.Cards.success), { requestId })
        yield* Effect.repeat(sent, { until: (entries) => entries.length >= 4, schedule: Schedule.spaced("20 millis") })
        yield* Effect.sleep("3 seconds")
      }).pipe(Effect.provide(quotesLayer(server, filename, options), { local: true }), Effect.scoped)
      const stopped = yield* Clock.currentTimeMillis
      // the second process, on the same file, sends the POST again once the timer is due: no second transaction.
      // It would run no POST again itself (no pauses): the first run's decision, recorded, is what it follows.
      const quote = yield* Effect.flatMap(DurableQuotes.DurableQuotes, (quotes) => quotes.result(requestId)).pipe(
        Effect.provide(quotesLayer(server, filename, { track: { resumeDelays: [] } }), { local: true })
      )
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId]).toEqual([quote.transactionId])
      const posts = yield* sent
      expect(posts.map((entry) => entry.previousAttempts)).toEqual([0, 1, 2, 3, 4])
      // the timer the first process set is the one that fired in the second: not lost, not started again (9 s)
      const [lost, resumed] = posts.slice(3).map((entry) => DateTime.toEpochMillis(entry.time))
      expect(stopped - lost!).toBeLessThan(5_000)
      expect(resumed! - lost!).toBeGreaterThanOrEqual(6_000)
      expect(resumed! - lost!).toBeLessThan(8_500)
      expect(resumed!).toBeGreaterThan(stopped)
    }).pipe(Effect.ensuring(Effect.flatMap(Sandbox.SandboxServer, (server) => server.setFaults([]))), Effect.scoped))

  it.effect("a POST whose answers are always lost fails after 3 runs of its attempts, with one requestId and one transaction", () =>
    withQuotes({ track: { resumeDelays: ["100 millis", "100 millis"] } })(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer" }])
      const requestId = "durable-lost-answers-2"
      const error = yield* Effect.flip(quotes.execute(card(TestData.Cards.success), { requestId })).pipe(
        Effect.ensuring(server.setFaults([]))
      )
      assert(error._tag === "TransportError")
      expect(error.attempts).toBe(12)
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId]).toHaveLength(1)
      const sent = journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
      expect(sent.map((entry) => entry.previousAttempts)).toEqual(Array.from({ length: 12 }, (_, index) => index))
    })))

  it.effect("a POST refused to the attempts cap by an outage (503s) is sent again after the pause: the quote completes", () =>
    withQuotes({ track: { resumeDelays: ["1 second"] } })(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      // the first run of the submit activity: every attempt (4) refused before processing
      yield* server.setFaults([{ route: "createQuote", kind: "status503", times: 4 }])
      const requestId = "durable-outage-1"
      const quote = yield* quotes.execute(card(TestData.Cards.success), { requestId }).pipe(
        Effect.ensuring(server.setFaults([]))
      )
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId]).toEqual([quote.transactionId])
      const sent = journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
      expect(sent.map((entry) => [entry.previousAttempts, entry.status])).toEqual([
        [0, 503],
        [1, 503],
        [2, 503],
        [3, 503],
        [4, 201]
      ])
      const [refused, resumed] = sent.slice(3).map((entry) => DateTime.toEpochMillis(entry.time))
      expect(resumed! - refused!).toBeGreaterThanOrEqual(1_000)
      const events = yield* Stream.unwrap(Effect.map(EventLog.EventLog, (log) => log.follow(requestId, 0))).pipe(
        Stream.map(({ event }) => event),
        Stream.filter((event) => event._tag === "Retrying"),
        Stream.runCollect,
        Effect.provide(EventLog.layer()),
        Effect.orDie
      )
      expect(events.map((event) => event._tag === "Retrying" && [event.attempt, event.reason])).toEqual(
        [2, 3, 4, 5].map((attempt) => [attempt, "ServiceUnavailable (HTTP 503)"])
      )
    })))

  it.effect("a service that refuses connections, then is back within the pause: the quote completes, one transaction", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const upstream = new URL(server.baseUrl)
      // a port nothing listens on (the service down: connections refused), later a relay to the sandbox
      const port = yield* Effect.orDie(TestPg.freePort)
      const sockets = new Set<Net.Socket>()
      const relay = Net.createServer((socket) => {
        const sandbox = Net.connect(Number(upstream.port), upstream.hostname)
        for (const each of [socket, sandbox]) sockets.add(each.on("close", () => sockets.delete(each)))
        socket.on("error", () => sandbox.destroy()).pipe(sandbox).on("error", () => socket.destroy()).pipe(socket)
      })
      // the client's idle connections closed with it, not after their keep-alive
      yield* Effect.addFinalizer(() =>
        Effect.callback<void>((resume) => {
          relay.close(() => resume(Effect.void))
          for (const socket of sockets) socket.destroy()
        })
      )
      const url = `http://127.0.0.1:${port}`
      const requestId = "durable-refused-1"
      const filename = yield* tempDatabase
      yield* Effect.gen(function*() {
        const quotes = yield* DurableQuotes.DurableQuotes
        yield* quotes.submit(card(TestData.Cards.instant), { requestId })
        // the pause announced (the first run's attempts all refused), the service comes back
        const pause = yield* Stream.unwrap(Effect.map(EventLog.EventLog, (log) => log.follow(requestId, 0))).pipe(
          Stream.map(({ event }) => event),
          Stream.filter((event) => event._tag === "Retrying" && Duration.toMillis(event.delay) >= 3_000),
          Stream.runHead,
          Effect.provide(EventLog.layer()),
          Effect.orDie
        )
        assert(Option.isSome(pause) && pause.value._tag === "Retrying")
        expect(pause.value.reason).toMatch(/^(TransportError|TokenError)/)
        yield* Effect.callback<void>((resume) => {
          relay.listen(port, "127.0.0.1", () => resume(Effect.void))
        })
        const quote = yield* quotes.result(requestId)
        const journal = yield* server.journal
        expect(journal.transactionsByRequestId[requestId]).toEqual([quote.transactionId])
      }).pipe(
        Effect.provide(
          quotesLayer(server, filename, {
            client: { baseUrl: url, authUrl: url },
            track: { resumeDelays: ["3 seconds"] }
          }),
          { local: true }
        )
      )
    }).pipe(Effect.scoped))

  it.effect("a pause is never shorter than the service's Retry-After (past the client's own wait, a 503 ends its run)", () =>
    withQuotes({ track: { resumeDelays: ["100 millis"] } })(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      // Retry-After 2 s, past the client's longest wait (200 ms here): the client gives up after one attempt
      yield* server.setFaults([{ route: "createQuote", kind: "status503", times: 1, retryAfterSeconds: 2 }])
      const requestId = "durable-retry-after-1"
      const quote = yield* quotes.execute(card(TestData.Cards.instant), { requestId }).pipe(
        Effect.ensuring(server.setFaults([]))
      )
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId]).toEqual([quote.transactionId])
      const sent = journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
      expect(sent.map((entry) => [entry.previousAttempts, entry.status])).toEqual([[0, 503], [1, 201]])
      const [refused, resumed] = sent.map((entry) => DateTime.toEpochMillis(entry.time))
      expect(resumed! - refused!).toBeGreaterThanOrEqual(2_000)
    })))

  it.effect("credentials the token endpoint refuses are not an outage: the quote fails at once with TokenError, no POST", () =>
    withQuotes({ client: { clientSecret: "not-the-partner-secret" }, track: { resumeDelays: ["1 minute"] } })(
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const quotes = yield* DurableQuotes.DurableQuotes
        const requestId = "durable-refused-token-1"
        const error = yield* Effect.flip(quotes.execute(card(TestData.Cards.instant), { requestId })).pipe(
          Effect.timeout("20 seconds")
        )
        assert(error._tag === "TokenError")
        expect(Errors.isOutage(error)).toBe(false)
        const journal = yield* server.journal
        expect(journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId))
          .toEqual([])
      })
    ))

  it.effect("an outage that outlasts the pauses fails the quote with its error, after one run per pause", () =>
    withQuotes({ track: { resumeDelays: ["100 millis"] } })(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      yield* server.setFaults([{ route: "createQuote", kind: "status503" }])
      const requestId = "durable-outage-2"
      const error = yield* Effect.flip(quotes.execute(card(TestData.Cards.success), { requestId })).pipe(
        Effect.ensuring(server.setFaults([]))
      )
      assert(error._tag === "ServiceUnavailable")
      expect(error.attempts).toBe(8)
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId] ?? []).toEqual([])
      expect(journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId))
        .toHaveLength(8)
    })))

  it.effect("a refusal that is not an outage (400) fails the quote at once: no pause, one POST", () =>
    withQuotes({ track: { resumeDelays: ["1 minute"] } })(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      const requestId = "durable-not-outage-1"
      const error = yield* Effect.flip(quotes.execute(card(TestData.Cards.invalid), { requestId }))
      expect(Errors.isOutage(error)).toBe(false)
      const journal = yield* server.journal
      expect(journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId))
        .toHaveLength(1)
    })))

  it.effect("QuoteOutcomes is told each terminal outcome once, with its requestId and transactionId", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const told = yield* Queue.unbounded<QuoteWorkflow.Outcome>()
      const outcomes = Layer.succeed(QuoteWorkflow.QuoteOutcomes, { publish: (outcome) => Queue.offer(told, outcome) })
      const filename = yield* tempDatabase
      yield* Effect.gen(function*() {
        const quotes = yield* DurableQuotes.DurableQuotes
        const quote = yield* quotes.execute(card(TestData.Cards.success), { requestId: "durable-outcome-1" })
        const refused = yield* Effect.flip(
          quotes.execute(card(TestData.Cards.invalid), { requestId: "durable-outcome-2" })
        )
        const outcomesTold = yield* Queue.takeAll(told)
        expect(outcomesTold.map(({ requestId, transactionId }) => [requestId, transactionId])).toEqual([
          ["durable-outcome-1", quote.transactionId],
          ["durable-outcome-2", (yield* server.journal).transactionsByRequestId["durable-outcome-2"]![0]]
        ])
        // Compared by value (`Equal`): a `BigDecimal` memoizes its normalized form when first compared or
        // encoded, so the quote told and the one returned (decoded from the stored reply) differ structurally.
        expect(Equal.equals(outcomesTold[0]!.exit, Exit.succeed(quote))).toBe(true)
        expect(Equal.equals(outcomesTold[1]!.exit, Exit.fail(refused))).toBe(true)
      }).pipe(Effect.provide(quotesLayer(server, filename).pipe(Layer.provide(outcomes)), { local: true }))
    }).pipe(Effect.scoped))

  it.effect("a card that cannot be opened fails that quote with a typed error; its requestId is then free", () =>
    withQuotes()(Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const quotes = yield* DurableQuotes.DurableQuotes
      // A node of this deployment with another data key (misconfigured): its cards cannot be opened here.
      const elsewhere = yield* DurableQuotes.make().pipe(
        Effect.provideService(CardCipher.CardCipher, yield* CardCipher.make(otherKey())),
        Effect.orDie
      )
      const requestId = "durable-wrong-key-1"
      const error = yield* Effect.flip(elsewhere.execute(card(TestData.Cards.success), { requestId }))
      assert(error._tag === "CardDecryptionError")
      expect(error.requestId).toBe(requestId)
      expect((yield* Effect.flip(quotes.result(requestId)))._tag).toBe("CardDecryptionError")
      expect((yield* server.journal).transactionsByRequestId[requestId]).toBeUndefined()
      // The requestId does not stand for ever with that failure: the card sealed here completes under it.
      const quote = yield* quotes.execute(card(TestData.Cards.success), { requestId })
      expect((yield* quotes.result(requestId)).transactionId).toBe(quote.transactionId)
      expect((yield* server.journal).transactionsByRequestId[requestId]).toEqual([quote.transactionId])
    })))
})

describe("DurableQuotes", () => {
  it("exports the API", () => {
    expect(DurableQuotes.DurableQuotes.key).toBe("@gcx/workflow/DurableQuotes")
  })
})

describe("Embedded", () => {
  it.live(
    "one process per database file: a second runner on a file in use fails with a clear error",
    () =>
      Effect.gen(function*() {
        const filename = yield* tempDatabase
        yield* Layer.build(Embedded.layer({ filename }))
        const error = yield* Effect.flip(Layer.build(Embedded.layerSqlite(filename)))
        expect(error.message).toContain("is in use by another process")
      }).pipe(Effect.scoped),
    20_000
  )
})

layer(sandbox({ timeScale: 0.1 }), { excludeTestServices: true })("Embedded: the SQLite file", (it) => {
  it.effect("synchronous is NORMAL unless FULL is asked for", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const synchronous = (options: Embedded.SqliteOptions, file: string) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ readonly synchronous: number }>`PRAGMA synchronous`
          return rows[0]?.synchronous
        }).pipe(Effect.provide(Embedded.layerSqlite(Path.join(directory, file), options)), Effect.scoped)
      // SQLite's codes: 1 is NORMAL, 2 is FULL.
      expect(yield* synchronous({}, "normal.db")).toBe(1)
      expect(yield* synchronous({ synchronous: "FULL" }, "full.db")).toBe(2)
    }).pipe(Effect.scoped, Effect.orDie))

  it.effect(
    "a file written with the cluster's 300 shards is moved onto one at open; its quote in flight completes",
    () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const filename = yield* tempDatabase
        // The slow card takes 3 s at this time scale: the first runner stops (at once) with the quote in flight.
        const requestId = yield* Effect.gen(function*() {
          const quotes = yield* DurableQuotes.DurableQuotes
          return yield* quotes.submit(card(TestData.Cards.slow))
        }).pipe(
          Effect.provide(
            quotesLayer(server, filename, {
              sharding: { shardsPerGroup: 300, entityTerminationTimeout: "10 millis" }
            })
          ),
          Effect.scoped
        )
        const [quote, shards] = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const shards = yield* sql<{ readonly shard_id: string }>`SELECT DISTINCT shard_id FROM cluster_messages`
          const quotes = yield* DurableQuotes.DurableQuotes
          return [yield* quotes.result(requestId), shards.map(({ shard_id }) => shard_id)] as const
        }).pipe(Effect.provide(quotesLayer(server, filename)), Effect.scoped)
        expect(shards).toEqual(["default:1"])
        expect(BigDecimal.format(quote.actualCardValue)).toBe("250")
        expect((yield* server.journal).transactionsByRequestId[requestId]).toEqual([quote.transactionId])
      }).pipe(Effect.scoped),
    30_000
  )
})
