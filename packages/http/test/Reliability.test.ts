/**
 * Tokens, retries and idempotency against a real sandbox over real HTTP,
 * counted in the sandbox's request journal.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Errors, Routes } from "@gcx/core"
import { ExchangeClient, ExchangeConfig, TokenProvider } from "@gcx/http"
import type { Faults, Journal } from "@gcx/sandbox"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Duration, Effect, Layer, Ref, Schedule } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { card, entriesOf, journal, optionsFor, pollUntilDone, sandbox, timed, withClient } from "./fixtures.js"

const server = Sandbox.SandboxServer
const reset = Effect.flatMap(server, (server) => server.reset)
const setFaults = (rules: ReadonlyArray<Faults.FaultRule>) =>
  Effect.flatMap(server, (server) => server.setFaults(rules))
const client = ExchangeClient.ExchangeClient

/** Waits (real time, up to 5 s) until the journal satisfies `done`. */
const eventually = (done: (journal: Journal.Journal) => boolean) =>
  journal.pipe(
    Effect.filterOrFail(done, () => "the journal never got there"),
    Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo({ duration: "5 seconds" })))
  )

/** Every createQuote entry of one requestId. */
const postsOf = (requestId: string) =>
  Effect.map(journal, (recorded) => entriesOf(recorded, "createQuote").filter((entry) => entry.requestId === requestId))

layer(sandbox({ timeScale: 0.01 }), { excludeTestServices: true })("reliability", (it) => {
  describe("tokens", () => {
    it.effect("1,000 concurrent calls on a cold cache make exactly one token request", () =>
      Effect.gen(function*() {
        const exchange = yield* client
        const results = yield* Effect.all(Array.from({ length: 1000 }, () => exchange.heartbeat), {
          concurrency: "unbounded"
        })
        expect(results.every((result) => result.httpStatus === 200)).toBe(true)
        const recorded = yield* journal
        expect(recorded.requests.token).toBe(1)
        expect(recorded.requests.heartbeat).toBe(1000)
      }).pipe(
        // the sandbox answers about one request per few milliseconds: give the burst time
        withClient({ requestTimeout: "50 seconds" }),
        Effect.provide(sandbox())
      ), 60_000)

    it.effect("a short-lived token is refreshed ahead of expiry, without a 401", () =>
      Effect.gen(function*() {
        yield* reset
        yield* Effect.flatMap(server, (server) => server.setTokenLifetime(4))
        const exchange = yield* client
        yield* exchange.heartbeat
        // a 4 s token is refreshed once less than 2 s is left
        yield* Effect.sleep("2200 millis")
        yield* exchange.heartbeat
        yield* eventually((recorded) => recorded.requests.token === 2)
        yield* exchange.heartbeat
        const recorded = yield* journal
        expect(recorded.requests.token).toBe(2)
        expect(entriesOf(recorded, "heartbeat").map((entry) => entry.status)).toEqual([200, 200, 200])
      }).pipe(withClient()))

    it.effect("an expired token is replaced before the call, without a 401", () =>
      Effect.gen(function*() {
        yield* reset
        yield* Effect.flatMap(server, (server) => server.setTokenLifetime(1))
        const exchange = yield* client
        yield* exchange.heartbeat
        yield* Effect.sleep("1100 millis")
        const result = yield* exchange.heartbeat
        expect(result.attempts).toBe(1)
        const recorded = yield* journal
        expect(recorded.requests.token).toBe(2)
        expect(entriesOf(recorded, "heartbeat").map((entry) => entry.status)).toEqual([200, 200])
      }).pipe(withClient()))

    it.effect("a refused token is invalidated and the request retried once with a new one", () =>
      Effect.gen(function*() {
        yield* reset
        const api = yield* server
        // The first token comes from another sandbox, whose signing key differs: the API refuses it with a 401.
        const recovered = yield* Effect.gen(function*() {
          const other = yield* Sandbox.SandboxServer
          const redirected = yield* Ref.make(false)
          const firstTokenElsewhere = Layer.effect(
            HttpClient.HttpClient,
            Effect.map(HttpClient.HttpClient, (http) =>
              HttpClient.mapRequestEffect(http, (request) =>
                Effect.map(
                  Ref.getAndSet(redirected, true),
                  (done) => done ? request : HttpClientRequest.setUrl(request, `${other.authUrl}${Routes.tokenPath}`)
                )))
          ).pipe(Layer.provide(FetchHttpClient.layer))
          const config = ExchangeConfig.layer(optionsFor(api))
          const tokens = TokenProvider.layer.pipe(Layer.provide(firstTokenElsewhere))
          const live = ExchangeClient.layer.pipe(
            Layer.provideMerge(tokens),
            Layer.provide(FetchHttpClient.layer),
            Layer.provide(config),
            Layer.orDie
          )
          const created = yield* Effect.flatMap(
            client,
            (exchange) => exchange.createQuote(card(TestData.Cards.instant))
          )
            .pipe(Effect.provide(live))
          expect((yield* other.journal).requests.token).toBe(1)
          return created
        }).pipe(Effect.provide(sandbox()))
        expect(recovered.attempts).toBe(2)
        const posts = yield* postsOf(recovered.requestId)
        expect(posts.map((entry) => [entry.status, entry.previousAttempts])).toEqual([[401, 0], [201, 1]])
        const recorded = yield* journal
        expect(recorded.requests.token).toBe(1)
        expect(recorded.transactionsByRequestId[recovered.requestId]).toEqual([recovered.transactionId])
      }))

    it.effect("a token refused twice surfaces Unauthorized after two attempts", () =>
      Effect.gen(function*() {
        yield* reset
        const api = yield* server
        const error = yield* Effect.gen(function*() {
          const other = yield* Sandbox.SandboxServer
          return yield* Effect.flatMap(client, (exchange) => Effect.flip(exchange.heartbeat)).pipe(
            Effect.provide(
              ExchangeClient.layerWith(optionsFor(api, { authUrl: other.authUrl })).pipe(
                Layer.provide(FetchHttpClient.layer),
                Layer.orDie
              )
            )
          )
        }).pipe(Effect.provide(sandbox()))
        expect(error).toBeInstanceOf(Errors.Unauthorized)
        expect(error).toMatchObject({ httpStatus: 401, attempts: 2 })
        expect(entriesOf(yield* journal, "heartbeat").map((entry) => entry.previousAttempts)).toEqual([0, 1])
      }))
  })

  describe("retries and idempotency", () => {
    it.effect.each(
      [
        { name: "an injected 503", kind: "status503", status: 503 },
        { name: "an injected 500", kind: "status500", status: 500 },
        { name: "a connection reset", kind: "reset", status: undefined },
        { name: "a processed but dropped answer", kind: "dropAnswer", status: 201 },
        { name: "a processed but garbled 201", kind: "malformed", status: 201 }
      ] as const
    )("a POST retried after $name keeps its requestId: one transaction", ({ kind, status }) =>
      Effect.gen(function*() {
        yield* reset
        yield* setFaults([{ route: "createQuote", kind, times: 1 }])
        const exchange = yield* client
        const created = yield* exchange.createQuote(card(TestData.Cards.success))
        expect(created.attempts).toBe(2)
        expect(Duration.toMillis(created.retryDelay)).toBeGreaterThan(0)
        const posts = yield* postsOf(created.requestId)
        expect(posts.map((entry) => [entry.status, entry.previousAttempts])).toEqual([[status, 0], [201, 1]])
        const recorded = yield* journal
        expect(recorded.transactionsByRequestId).toEqual({ [created.requestId]: [created.transactionId] })
        const transactions = yield* Effect.flatMap(server, (server) => server.transactions)
        expect(transactions.map((transaction) => transaction.transactionId)).toEqual([created.transactionId])
        const done = yield* pollUntilDone(created.transactionId)
        expect(done.status.response.isCompleted).toBe(true)
      }).pipe(withClient()))

    it.effect("a POST whose answer was lost is retried even on a 500: the transaction that exists is never given up", () =>
      Effect.gen(function*() {
        yield* reset
        // The chaos run's loss: the first answer is dropped after processing, the retry meets a 500.
        yield* setFaults([
          { route: "createQuote", kind: "dropAnswer", sequence: [true, false, false] },
          { route: "createQuote", kind: "status500", sequence: [false, true, false] }
        ])
        const exchange = yield* client
        const created = yield* exchange.createQuote(card(TestData.Cards.success))
        expect(created.attempts).toBe(3)
        const posts = yield* postsOf(created.requestId)
        expect(posts.map((entry) => [entry.status, entry.previousAttempts])).toEqual([[201, 0], [500, 1], [201, 2]])
        const recorded = yield* journal
        expect(recorded.transactionsByRequestId).toEqual({ [created.requestId]: [created.transactionId] })
      }).pipe(withClient()))

    it.effect("a GET retried after a reset and a 503 keeps its requestId and counts previousAttempts", () =>
      Effect.gen(function*() {
        yield* reset
        const exchange = yield* client
        const created = yield* exchange.createQuote(card(TestData.Cards.instant))
        yield* setFaults([
          { route: "getTransaction", kind: "reset", sequence: [true, false, false] },
          { route: "getTransaction", kind: "status503", sequence: [false, true, false] }
        ])
        const status = yield* exchange.getTransaction(created.transactionId)
        expect(status.attempts).toBe(3)
        const gets = entriesOf(yield* journal, "getTransaction")
        expect(gets.map((entry) => [entry.status, entry.previousAttempts, entry.requestId])).toEqual([
          [undefined, 0, status.requestId],
          [503, 1, status.requestId],
          [200, 2, status.requestId]
        ])
      }).pipe(withClient()))

    it.effect(
      "a POST that timed out is retried with the same requestId: one transaction",
      () =>
        Effect.gen(function*() {
          yield* setFaults([{ route: "createQuote", kind: "stall", times: 1 }])
          const exchange = yield* client
          const created = yield* exchange.createQuote(card(TestData.Cards.success))
          expect(created.attempts).toBe(2)
          // let the stalled first attempt reach the service too
          yield* Effect.sleep("2200 millis")
          const recorded = yield* journal
          expect(recorded.transactionsByRequestId).toEqual({ [created.requestId]: [created.transactionId] })
          const posts = yield* postsOf(created.requestId)
          expect(posts.map((entry) => entry.previousAttempts).sort()).toEqual(
            posts.length === 2 ? [0, 1] : [1]
          )
        }).pipe(
          withClient({ requestTimeout: "500 millis" }),
          // its own sandbox: the stalled request finishes after the test
          Effect.provide(sandbox({ timeScale: 0.01 }))
        ),
      10_000
    )

    it.effect("Retry-After is honoured (measured)", () =>
      Effect.gen(function*() {
        yield* reset
        yield* setFaults([{ route: "createQuote", kind: "status503", times: 1, retryAfterSeconds: 1 }])
        const exchange = yield* client
        const seen: Array<{ readonly attempt: number; readonly delay: Duration.Duration; readonly tag: string }> = []
        const [created, elapsed] = yield* timed(exchange.createQuote(card(TestData.Cards.success), {
          onRetry: (info) =>
            Effect.sync(() => seen.push({ attempt: info.attempt, delay: info.delay, tag: info.error._tag }))
        }))
        expect(created.attempts).toBe(2)
        expect(Duration.toMillis(created.retryDelay)).toBeGreaterThanOrEqual(1000)
        expect(Duration.toMillis(elapsed)).toBeGreaterThanOrEqual(1000)
        expect(seen).toEqual([{ attempt: 2, delay: created.retryDelay, tag: "ServiceUnavailable" }])
      }).pipe(withClient()))

    it.effect("in an outage the retry budget runs dry and calls fail fast", () =>
      Effect.gen(function*() {
        yield* reset
        const exchange = yield* client
        yield* exchange.heartbeat // the token is cached before the outage
        yield* setFaults([{ route: "any", kind: "status503" }])
        const errors = yield* Effect.forEach(Array.from({ length: 5 }), () => Effect.flip(exchange.heartbeat))
        expect(errors.map((error) => error._tag)).toEqual(Array.from({ length: 5 }, () => "ServiceUnavailable"))
        expect(errors.map((error) => "attempts" in error ? error.attempts : undefined)).toEqual([4, 1, 1, 1, 1])
        // fail fast, measured on what the client waited rather than on a loaded machine's wall clock:
        // the first call waited out its 3 backoffs (at most 10 + 20 + 40 ms), the others not at all
        const waited = errors.map((error) => "retryDelayMillis" in error ? error.retryDelayMillis : undefined)
        expect(waited[0]).toBeGreaterThan(0)
        expect(waited[0]).toBeLessThanOrEqual(70)
        expect(waited.slice(1)).toEqual([0, 0, 0, 0])
        const recorded = yield* journal
        expect(recorded.requests.heartbeat).toBe(1 + 4 + 4)
      }).pipe(
        withClient({ retry: { maxAttempts: 4, baseDelay: "10 millis", budget: { capacity: 3, refillPerSecond: 0 } } })
      ))
  })
})
