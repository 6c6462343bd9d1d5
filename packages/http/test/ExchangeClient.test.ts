/**
 * The exchange client against a real sandbox over real HTTP: every endpoint,
 * both auth styles, the stage segment on and off, and every error the sandbox
 * can produce, as the right tagged error.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Errors } from "@gcx/core"
import { ExchangeClient, ExchangeConfig, TokenProvider } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { BigDecimal, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import {
  card,
  closedPort,
  entriesOf,
  hex32,
  journal,
  optionsFor,
  pollUntilDone,
  pollUntilFailure,
  sandbox,
  withClient
} from "./fixtures.js"

/** Whether a decoded amount equals `amount`. */
const amountOf = (amount: string) => (value: BigDecimal.BigDecimal | undefined) =>
  value !== undefined && BigDecimal.equals(value, BigDecimal.fromStringUnsafe(amount))

const reset = Effect.flatMap(Sandbox.SandboxServer, (server) => server.reset)

/** Three attempts, 5 ms apart. */
const fastRetries = { maxAttempts: 3, baseDelay: "5 millis", maxDelay: "2 seconds", budget: { capacity: 100 } } as const

/**
 * A client whose token endpoint goes down after its first `good` tokens: each
 * later `get` fails with a 503 `TokenError`. A stand-in for the real
 * provider's `get`, since the endpoint failing exactly between two attempts of
 * one call is a race in real time; the requests to the service are real.
 */
const tokensFailingAfter = (good: number, options: ExchangeConfig.Options) => {
  const tokens = Layer.effect(
    TokenProvider.TokenProvider,
    Effect.map(TokenProvider.TokenProvider, (real) => {
      let gets = 0
      return TokenProvider.TokenProvider.of({
        ...real,
        get: Effect.suspend(() =>
          ++gets <= good ? real.get : Effect.fail(new Errors.TokenError({ message: "HTTP 503", httpStatus: 503 }))
        )
      })
    })
  ).pipe(Layer.provide(TokenProvider.layer))
  return ExchangeClient.layer.pipe(
    Layer.provide(tokens),
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(ExchangeConfig.layer(options)),
    Layer.orDie
  )
}

layer(sandbox({ timeScale: 0.01 }), { excludeTestServices: true })("ExchangeClient", (it) => {
  describe("endpoints", () => {
    it.effect.each(["body", "basic"] as const)(
      "heartbeat with the %s auth style",
      (authStyle) =>
        Effect.gen(function*() {
          yield* reset
          const client = yield* ExchangeClient.ExchangeClient
          const result = yield* client.heartbeat
          expect(result.httpStatus).toBe(200)
          expect(result.requestId).toMatch(hex32)
          expect(Option.getOrThrow(result.traceId)).toMatch(hex32)
          expect(result.attempts).toBe(1)
          const recorded = yield* journal
          expect(recorded.requests.token).toBe(1)
          expect(entriesOf(recorded, "heartbeat")).toMatchObject([
            { status: 200, requestId: result.requestId, previousAttempts: 0 }
          ])
        }).pipe(withClient({ authStyle }))
    )

    it.effect.each(
      [
        { name: "on", stage: "sandbox", prefix: "/sandbox/v3/exchange/quote", authStyle: "body" },
        { name: "off", stage: "", prefix: "/v3/exchange/quote", authStyle: "body" },
        { name: "on", stage: "sandbox", prefix: "/sandbox/v3/exchange/quote", authStyle: "basic" }
      ] as const
    )("createQuote and getTransaction with the stage segment $name, $authStyle auth style", ({
      authStyle,
      prefix,
      stage
    }) =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const created = yield* client.createQuote(card(TestData.Cards.success))
        expect(created.transactionId).toBe(created.quote.transactionId)
        expect(created.quote.isCompleted).toBe(false)
        expect(created.requestId).toMatch(hex32)
        expect(Option.getOrThrow(created.traceId)).toMatch(hex32)
        expect(Option.getOrThrow(created.location)).toMatch(new RegExp(`${prefix}/${created.transactionId}$`))
        expect(created.attempts).toBe(1)

        const done = yield* pollUntilDone(created.transactionId)
        expect(done.status.response.isCompleted).toBe(true)
        expect(done.status.response.actualCardValue).toSatisfy(amountOf("100"))
        expect(done.status.response.exchangeCardValue).toSatisfy(amountOf("85"))
        expect(done.status.steps?.every((step) => step.isCompleted)).toBe(true)
        expect(done.requestId).toMatch(hex32)
        expect(done.requestId).not.toBe(created.requestId)

        const recorded = yield* journal
        const posts = entriesOf(recorded, "createQuote")
        expect(posts).toMatchObject([
          { status: 201, requestId: created.requestId, previousAttempts: 0, transactionId: created.transactionId }
        ])
        expect(posts[0].path).toBe(prefix)
        const gets = entriesOf(recorded, "getTransaction")
        expect(gets.length).toBeGreaterThan(0)
        for (const get of gets) {
          expect(get.path).toBe(`${prefix}/${created.transactionId}`)
          expect(get.requestId).toMatch(hex32)
          expect(get.previousAttempts).toBe(0)
        }
        expect(recorded.transactionsByRequestId).toEqual({ [created.requestId]: [created.transactionId] })
        // one token for the whole conversation, obtained with the configured auth style
        expect(recorded.requests.token).toBe(1)
      }).pipe(withClient({ stage, authStyle })))

    it.effect("a card that completes at once answers completed on the POST", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const created = yield* client.createQuote(card(TestData.Cards.instant))
        expect(created.quote.isCompleted).toBe(true)
        expect(created.quote.percentComplete).toBe(100)
        expect(created.quote.actualCardValue).toSatisfy(amountOf("50"))
      }).pipe(withClient()))

    it.effect("the caller's requestId is sent, and a given QuoteRequest is accepted", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const requestId = "caller-chosen-request-id-0001"
        const created = yield* client.createQuote(card(TestData.Cards.instant), { requestId })
        expect(created.requestId).toBe(requestId)
        const status = yield* client.getTransaction(created.transactionId, { requestId: "caller-get-0001" })
        expect(status.requestId).toBe("caller-get-0001")
        const recorded = yield* journal
        expect(recorded.transactionsByRequestId[requestId]).toEqual([created.transactionId])
        expect(entriesOf(recorded, "getTransaction")[0].requestId).toBe("caller-get-0001")
      }).pipe(withClient()))

    it.effect("bad input is refused before any I/O", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const noPin = yield* Effect.flip(client.createQuote(card(TestData.Cards.success, " ")))
        expect(noPin).toBeInstanceOf(Errors.InvalidCardInput)
        expect(noPin).toMatchObject({ field: "card.pinNumber" })
        const badRequestId = yield* Effect.flip(
          client.createQuote(card(TestData.Cards.success), { requestId: "has spaces" })
        )
        expect(badRequestId).toBeInstanceOf(Errors.InvalidRequest)
        expect(badRequestId.message).toContain("requestId")
        const badTransactionId = yield* Effect.flip(client.getTransaction("../../oauth2/token"))
        expect(badTransactionId).toBeInstanceOf(Errors.InvalidRequest)
        expect(badTransactionId.message).toContain("transactionId")
        const recorded = yield* journal
        expect(recorded.entries).toEqual([])
      }).pipe(withClient()))
  })

  describe("errors", () => {
    it.effect.each([
      { name: "invalid card", number: TestData.Cards.invalid, pin: TestData.pin, tag: "InvalidCard" },
      { name: "rejected PIN", number: TestData.Cards.success, pin: TestData.rejectedPin, tag: "InvalidCard" },
      { name: "zero balance", number: TestData.Cards.zeroBalance, pin: TestData.pin, tag: "CardValueOutOfRange" },
      { name: "card not accepted", number: TestData.Cards.notAccepted, pin: TestData.pin, tag: "CardNotAccepted" },
      {
        name: "merchant unavailable",
        number: TestData.Cards.merchantUnavailable,
        pin: TestData.pin,
        tag: "MerchantUnavailable"
      }
    ])(
      "$name arrives from the GET as $tag, with its messages and trace id, not retried",
      ({ number, pin, tag }) =>
        Effect.gen(function*() {
          yield* reset
          const client = yield* ExchangeClient.ExchangeClient
          const created = yield* client.createQuote(card(number, pin))
          const error = yield* pollUntilFailure(created.transactionId)
          expect(error._tag).toBe(tag)
          expect(error).toMatchObject({ httpStatus: 400, transactionId: created.transactionId, attempts: 1 })
          if (!("userMessage" in error)) throw new Error("not a service error")
          expect(error.errorCode).toMatch(/^exchange\./)
          expect(error.message.length).toBeGreaterThan(0)
          expect(error.userMessage?.length).toBeGreaterThan(0)
          expect(error.traceId).toMatch(hex32)
          expect(error.requestId).toMatch(hex32)
          const recorded = yield* journal
          const failed = entriesOf(recorded, "getTransaction").filter((entry) => entry.status === 400)
          expect(failed).toHaveLength(1)
        }).pipe(withClient())
    )

    it.effect("an unknown transaction is TransactionNotFound (404)", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const error = yield* Effect.flip(client.getTransaction("1JXX657P9VCKN74WVFNBH75GWR"))
        expect(error).toBeInstanceOf(Errors.TransactionNotFound)
        expect(error).toMatchObject({
          httpStatus: 404,
          errorCode: "exchange.transaction.not.found",
          transactionId: "1JXX657P9VCKN74WVFNBH75GWR"
        })
        expect(error.traceId).toMatch(hex32)
      }).pipe(withClient()))

    it.effect("an unknown product line is InvalidRequest", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const error = yield* Effect.flip(
          client.createQuote({ ...card(TestData.Cards.success), productLineId: "9999" })
        )
        expect(error).toBeInstanceOf(Errors.InvalidRequest)
        expect(error).toMatchObject({ httpStatus: 400, errorCode: "exchange.invalid.productLine", attempts: 1 })
      }).pipe(withClient()))

    it.effect("a wrong x-api-key is InvalidApiKey, on every endpoint", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const errors = [
          yield* Effect.flip(client.heartbeat),
          yield* Effect.flip(client.createQuote(card(TestData.Cards.success))),
          yield* Effect.flip(client.getTransaction("1JXX657P9VCKN74WVFNBH75GWR"))
        ]
        for (const error of errors) {
          expect(error).toBeInstanceOf(Errors.InvalidApiKey)
          expect(error).toMatchObject({ httpStatus: 400, errorCode: "exchange.invalid.x-api-key", attempts: 1 })
          expect(error.message).not.toContain("wrong-api-key")
        }
      }).pipe(withClient({ apiKey: "wrong-api-key" })))

    it.effect("a disabled partner is PartnerNotFound", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setPartnerEnabled(TestData.partner.clientId, false)
        const client = yield* ExchangeClient.ExchangeClient
        const error = yield* Effect.flip(client.createQuote(card(TestData.Cards.success)))
        expect(error).toBeInstanceOf(Errors.PartnerNotFound)
        expect(error).toMatchObject({ errorCode: "exchange.partner.not.found" })
      }).pipe(withClient()))

    it.effect.each(["body", "basic"] as const)(
      "a wrong client secret is a TokenError with the status and the OAuth code (%s style)",
      (authStyle) =>
        Effect.gen(function*() {
          yield* reset
          const client = yield* ExchangeClient.ExchangeClient
          const error = yield* Effect.flip(client.heartbeat)
          expect(error).toBeInstanceOf(Errors.TokenError)
          expect(error).toMatchObject({ httpStatus: 401, oauthError: "invalid_client" })
          expect(error.traceId).toMatch(hex32)
          expect(error.message).not.toContain("not-the-secret")
          const recorded = yield* journal
          expect(recorded.requests).toMatchObject({ token: 1, heartbeat: 0 })
        }).pipe(withClient({ authStyle, clientSecret: "not-the-secret" }))
    )

    it.effect("a 500 on the POST that persists is ServerError after the capped attempts, one requestId", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([{ route: "createQuote", kind: "status500" }])
        const client = yield* ExchangeClient.ExchangeClient
        const error = yield* Effect.flip(client.createQuote(card(TestData.Cards.success)))
        expect(error).toBeInstanceOf(Errors.ServerError)
        expect(error).toMatchObject({
          httpStatus: 500,
          errorCode: "Error",
          attempts: 4,
          traceId: expect.stringMatching(hex32)
        })
        const posts = entriesOf(yield* journal, "createQuote")
        expect(posts.map((entry) => entry.previousAttempts)).toEqual([0, 1, 2, 3])
        expect(new Set(posts.map((entry) => entry.requestId)).size).toBe(1)
      }).pipe(withClient()))

    it.effect("a 500 on the GET is retried up to the cap, then ServerError with the attempts", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([{ route: "getTransaction", kind: "status500" }])
        const client = yield* ExchangeClient.ExchangeClient
        const error = yield* Effect.flip(client.getTransaction("1JXX657P9VCKN74WVFNBH75GWR"))
        expect(error).toBeInstanceOf(Errors.ServerError)
        expect(error).toMatchObject({ httpStatus: 500, attempts: 4, retryDelayMillis: expect.any(Number) })
        expect((error as Errors.ServerError).retryDelayMillis).toBeGreaterThan(0)
        const gets = entriesOf(yield* journal, "getTransaction")
        expect(gets.map((entry) => entry.previousAttempts)).toEqual([0, 1, 2, 3])
        expect(new Set(gets.map((entry) => entry.requestId)).size).toBe(1)
      }).pipe(withClient()))

    it.effect("a 503 that does not pass is ServiceUnavailable after the capped attempts", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([{ route: "createQuote", kind: "status503" }])
        const client = yield* ExchangeClient.ExchangeClient
        const error = yield* Effect.flip(client.createQuote(card(TestData.Cards.success)))
        expect(error).toBeInstanceOf(Errors.ServiceUnavailable)
        expect(error).toMatchObject({
          httpStatus: 503,
          errorCode: "Service Unavailable",
          attempts: 3,
          traceId: expect.stringMatching(hex32)
        })
      }).pipe(withClient({ retry: { maxAttempts: 3, baseDelay: "5 millis" } })))

    it.effect("a body that does not decode is UnexpectedResponse with the trace id, never a defect", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        const client = yield* ExchangeClient.ExchangeClient
        const created = yield* client.createQuote(card(TestData.Cards.success))
        yield* server.setFaults([{ route: "getTransaction", kind: "malformed" }, {
          route: "heartbeat",
          kind: "malformed"
        }])
        const error = yield* Effect.flip(client.getTransaction(created.transactionId))
        expect(error).toBeInstanceOf(Errors.UnexpectedResponse)
        expect(error).toMatchObject({ httpStatus: 200, transactionId: created.transactionId, attempts: 1 })
        expect(error.traceId).toMatch(hex32)
        expect(error.message).toContain("did not decode")
        // the heartbeat's body is not relied on: a cut one still counts as an answer
        expect((yield* client.heartbeat).httpStatus).toBe(200)
      }).pipe(withClient()))

    it.effect("a POST whose 2xx body does not decode is retried like a lost answer: one transaction", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        // the sandbox processes the POST (the transaction is created), then garbles its answer
        yield* server.setFaults([{ route: "createQuote", kind: "malformed", times: 1 }])
        const client = yield* ExchangeClient.ExchangeClient
        const retries: Array<string> = []
        const created = yield* client.createQuote(card(TestData.Cards.success), {
          onRetry: (info) => Effect.sync(() => retries.push(`${info.attempt}:${info.error._tag}`))
        })
        expect(created.attempts).toBe(2)
        expect(retries).toEqual(["2:UnexpectedResponse"])
        const recorded = yield* journal
        const posts = entriesOf(recorded, "createQuote")
        expect(posts.map((entry) => [entry.status, entry.previousAttempts, entry.requestId, entry.faults])).toEqual([
          [201, 0, created.requestId, ["malformed"]],
          [201, 1, created.requestId, undefined]
        ])
        // the replay brought back the transaction the garbled answer was about
        expect(posts[0]!.transactionId).toBe(created.transactionId)
        expect(recorded.transactionsByRequestId).toEqual({ [created.requestId]: [created.transactionId] })
        expect((yield* server.transactions).map((transaction) => transaction.transactionId)).toEqual([
          created.transactionId
        ])
      }).pipe(withClient()))

    it.effect("a POST whose 2xx body never decodes fails after the cap with UnexpectedResponse, resumable", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([{ route: "createQuote", kind: "malformed" }])
        const client = yield* ExchangeClient.ExchangeClient
        const error = yield* Effect.flip(client.createQuote(card(TestData.Cards.success)))
        expect(error).toBeInstanceOf(Errors.UnexpectedResponse)
        expect(error).toMatchObject({ httpStatus: 201, attempts: 3, requestId: expect.stringMatching(hex32) })
        const recorded = yield* journal
        expect(entriesOf(recorded, "createQuote").map((entry) => entry.previousAttempts)).toEqual([0, 1, 2])
        expect(Object.values(recorded.transactionsByRequestId)).toHaveLength(1)
      }).pipe(withClient({ retry: { maxAttempts: 3, baseDelay: "5 millis" } })))

    it.effect("a POST whose answers are all lost is resumed with its requestId and attempts: the original transaction", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer" }])
        const client = yield* ExchangeClient.ExchangeClient
        const lost = yield* Effect.flip(client.createQuote(card(TestData.Cards.success)))
        expect(lost).toBeInstanceOf(Errors.TransportError)
        expect(lost).toMatchObject({ reason: "Reset", attempts: 3, requestId: expect.stringMatching(hex32) })
        if (lost._tag !== "TransportError") throw new Error(`expected a TransportError, got ${lost._tag}`)
        const requestId = lost.requestId!
        const original = (yield* journal).transactionsByRequestId[requestId]
        expect(original).toHaveLength(1)

        yield* server.setFaults([])
        const resumed = yield* client.createQuote(card(TestData.Cards.success), {
          requestId,
          previousAttempts: lost.attempts!
        })
        expect(resumed.requestId).toBe(requestId)
        expect(resumed.transactionId).toBe(original![0])
        expect(resumed.attempts).toBe(4)
        const recorded = yield* journal
        expect(entriesOf(recorded, "createQuote").map((entry) => [entry.status, entry.previousAttempts])).toEqual([
          [201, 0],
          [201, 1],
          [201, 2],
          [201, 3]
        ])
        expect(recorded.transactionsByRequestId).toEqual({ [requestId]: [resumed.transactionId] })
        expect(yield* server.transactions).toHaveLength(1)
      }).pipe(withClient({ retry: { maxAttempts: 3, baseDelay: "5 millis" } })))

    it.effect("a POST ended by a token failure after a lost answer carries its requestId and attempts: resumed, the original transaction", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer", times: 1 }])
        const [ended, heartbeat] = yield* Effect.flatMap(ExchangeClient.ExchangeClient, (client) =>
          Effect.all([
            Effect.flip(client.createQuote(card(TestData.Cards.success))),
            Effect.flip(client.heartbeat)
          ])).pipe(Effect.provide(tokensFailingAfter(1, optionsFor(server, { retry: fastRetries }))))
        expect(ended).toBeInstanceOf(Errors.TokenError)
        expect(ended).toMatchObject({ httpStatus: 503, attempts: 3, requestId: expect.stringMatching(hex32) })
        // a GET's token failure names no requestId: it is never resumed as a POST's
        expect(heartbeat).toMatchObject({ _tag: "TokenError", attempts: 3 })
        expect(heartbeat).not.toHaveProperty("requestId")
        expect(Errors.postResumption(heartbeat)).toEqual(Option.none())
        const resumption = Option.getOrThrow(Errors.postResumption(ended))
        const { previousAttempts: attempts, requestId } = resumption
        // the first POST was processed, its answer lost; the next two never went out
        const original = (yield* journal).transactionsByRequestId[requestId]
        expect(original).toHaveLength(1)

        const client = yield* ExchangeClient.ExchangeClient
        const resumed = yield* client.createQuote(card(TestData.Cards.success), resumption)
        expect(resumed.transactionId).toBe(original![0])
        expect(resumed.attempts).toBe(attempts + 1)
        const recorded = yield* journal
        expect(entriesOf(recorded, "createQuote").map((entry) => [entry.status, entry.previousAttempts])).toEqual([
          [201, 0],
          [201, 3]
        ])
        expect(yield* server.transactions).toHaveLength(1)
      }).pipe(withClient()))

    it.effect("a POST none of whose attempts went out (no token) names no requestId: nothing to resume", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        const ended = yield* Effect.flip(
          Effect.flatMap(ExchangeClient.ExchangeClient, (client) => client.createQuote(card(TestData.Cards.success)))
        ).pipe(Effect.provide(tokensFailingAfter(0, optionsFor(server, { retry: fastRetries }))))
        expect(ended).toMatchObject({ _tag: "TokenError", attempts: 3 })
        expect(ended).not.toHaveProperty("requestId")
        expect(Errors.postResumption(ended)).toEqual(Option.none())
        expect(entriesOf(yield* journal, "createQuote")).toEqual([])
      }))

    it.effect("the same requestId with an unchanged previousAttempts is InvalidRequest request.duplicate.requestId", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* ExchangeClient.ExchangeClient
        const created = yield* client.createQuote(card(TestData.Cards.success))
        for (
          const options of [{ requestId: created.requestId }, { requestId: created.requestId, previousAttempts: 0 }]
        ) {
          const duplicate = yield* Effect.flip(client.createQuote(card(TestData.Cards.success), options))
          expect(duplicate).toBeInstanceOf(Errors.InvalidRequest)
          expect(duplicate).toMatchObject({
            httpStatus: 400,
            errorCode: "request.duplicate.requestId",
            requestId: created.requestId,
            attempts: 1
          })
        }
        // a bad previousAttempts is refused before any I/O
        for (const previousAttempts of [-1, 1.5, Number.NaN]) {
          const bad = yield* Effect.flip(
            client.createQuote(card(TestData.Cards.success), { requestId: created.requestId, previousAttempts })
          )
          expect(bad).toBeInstanceOf(Errors.InvalidRequest)
          expect(bad.message).toContain("previousAttempts")
        }
        const recorded = yield* journal
        expect(entriesOf(recorded, "createQuote")).toHaveLength(3)
        expect(recorded.transactionsByRequestId).toEqual({ [created.requestId]: [created.transactionId] })
      }).pipe(withClient()))

    it.effect("no answer at all is TransportError: reset, refused, timed out", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([{ route: "heartbeat", kind: "reset" }])
        const client = yield* ExchangeClient.ExchangeClient
        const reset_ = yield* Effect.flip(client.heartbeat)
        expect(reset_).toBeInstanceOf(Errors.TransportError)
        expect(reset_).toMatchObject({ reason: "Reset", attempts: 2 })
        expect(entriesOf(yield* journal, "heartbeat").map((entry) => entry.previousAttempts)).toEqual([0, 1])

        yield* server.setFaults([{ route: "getTransaction", kind: "stall" }])
        const timedOut = yield* Effect.flip(client.getTransaction("1JXX657P9VCKN74WVFNBH75GWR"))
        expect(timedOut).toBeInstanceOf(Errors.TransportError)
        expect(timedOut).toMatchObject({ reason: "Timeout", attempts: 2 })
      }).pipe(withClient({ requestTimeout: "300 millis", retry: { maxAttempts: 2, baseDelay: "5 millis" } })))

    it.effect("a refused connection is TransportError Connect", () =>
      Effect.gen(function*() {
        // a token from the sandbox, then an API address where nothing listens
        const port = yield* closedPort
        const error = yield* Effect.flip(
          Effect.flatMap(ExchangeClient.ExchangeClient, (client) => client.createQuote(card(TestData.Cards.success)))
            .pipe(
              withClient({ baseUrl: `http://127.0.0.1:${port}`, retry: { maxAttempts: 2, baseDelay: "5 millis" } })
            )
        )
        expect(error._tag).toBe("TransportError")
        expect(error).toMatchObject({ reason: "Connect", attempts: 2 })
      }))
  })
})
