import { assert, describe, expect, it } from "@effect/vitest"
import { Errors } from "@gcx/core"
import { RetryBudget, RetryPolicy } from "@gcx/http"
import { Duration, Effect, Fiber, Logger, Option, Ref, References } from "effect"
import { TestClock } from "effect/testing"

const settings = (overrides: {
  readonly maxAttempts?: number
  readonly baseDelay?: Duration.Input
  readonly maxDelay?: Duration.Input
} = {}): RetryPolicy.Settings => ({
  maxAttempts: overrides.maxAttempts ?? 4,
  baseDelay: Duration.fromInputUnsafe(overrides.baseDelay ?? "1 second"),
  maxDelay: Duration.fromInputUnsafe(overrides.maxDelay ?? "10 seconds"),
  budget: { capacity: 100, refillPerSecond: 0 }
})

const unavailable = (retryAfterMillis?: number) =>
  new Errors.ServiceUnavailable({
    message: "HTTP 503",
    httpStatus: 503,
    ...(retryAfterMillis !== undefined ? { retryAfterMillis } : {})
  })
const reset = new Errors.TransportError({ message: "reset", reason: "Reset" })
const serverError = new Errors.ServerError({ message: "HTTP 500", httpStatus: 500 })
const unauthorized = new Errors.Unauthorized({ message: "HTTP 401", httpStatus: 401 })
const invalidCard = new Errors.InvalidCard({ message: "invalid card", httpStatus: 400 })
const merchantUnavailable = new Errors.MerchantUnavailable({ message: "merchant unavailable", httpStatus: 400 })

/**
 * Runs `execute` with an attempt that fails with `failures` in order, then
 * succeeds with "ok"; records the previousAttempts each attempt was given.
 */
const scripted = (
  failures: ReadonlyArray<RetryPolicy.RetryableError>,
  options: {
    readonly settings?: RetryPolicy.Settings
    readonly budget?: RetryBudget.RetryBudget
    readonly operation?: RetryPolicy.Operation
    readonly onRetry?: (info: RetryPolicy.RetryInfo) => Effect.Effect<void>
    readonly previousAttempts?: number
    readonly requestId?: string
  } = {}
) =>
  Effect.gen(function*() {
    const sent = yield* Ref.make<ReadonlyArray<number>>([])
    const budget = options.budget ?? (yield* RetryBudget.make({ capacity: 100, refillPerSecond: 0 }))
    const fiber = yield* RetryPolicy.execute({
      operation: options.operation ?? "getTransaction",
      settings: options.settings ?? settings(),
      budget,
      onRetry: options.onRetry,
      previousAttempts: options.previousAttempts,
      requestId: options.requestId,
      attempt: (previousAttempts) =>
        Ref.updateAndGet(sent, (all) => [...all, previousAttempts]).pipe(
          Effect.flatMap((all) =>
            all.length <= failures.length ? Effect.fail(failures[all.length - 1]) : Effect.succeed("ok")
          )
        )
    }).pipe(Effect.result, Effect.forkChild)
    return { fiber, sent }
  })

describe("RetryBudget", () => {
  it.effect("grants up to its capacity, then refuses until it refills", () =>
    Effect.gen(function*() {
      const budget = yield* RetryBudget.make({ capacity: 3, refillPerSecond: 2 })
      const granted = yield* Effect.all(Array.from({ length: 5 }, () => budget.take))
      expect(granted).toEqual([true, true, true, false, false])
      expect(yield* budget.available).toBe(0)
      yield* TestClock.adjust("499 millis")
      expect(yield* budget.take).toBe(false)
      yield* TestClock.adjust("1 millis")
      expect(yield* budget.take).toBe(true)
      yield* TestClock.adjust("1 hour")
      expect(yield* budget.available).toBe(3)
    }))

  it.effect("a capacity of 0 disables retries", () =>
    Effect.gen(function*() {
      const budget = yield* RetryBudget.make({ capacity: 0, refillPerSecond: 10 })
      yield* TestClock.adjust("1 minute")
      expect(yield* budget.take).toBe(false)
    }))
})

describe("RetryPolicy.shouldRetry", () => {
  it("POST quote retries 500, 503, 429 and connection failures", () => {
    expect(RetryPolicy.shouldRetry("createQuote", unavailable())).toBe(true)
    expect(RetryPolicy.shouldRetry("createQuote", new Errors.RateLimited({ message: "429" }))).toBe(true)
    for (const reason of ["Connect", "Reset", "Timeout"] as const) {
      expect(RetryPolicy.shouldRetry("createQuote", new Errors.TransportError({ message: "x", reason }))).toBe(true)
    }
    expect(RetryPolicy.shouldRetry("createQuote", new Errors.TransportError({ message: "x", reason: "Other" })))
      .toBe(false)
    expect(RetryPolicy.shouldRetry("createQuote", serverError)).toBe(true)
    // once an earlier attempt may have been processed, a POST is retried like a GET
    expect(RetryPolicy.shouldRetry("createQuote", serverError, true)).toBe(true)
    expect(RetryPolicy.shouldRetry("createQuote", new Errors.TransportError({ message: "x", reason: "Other" }), true))
      .toBe(true)
  })

  it("GET and heartbeat retry every transient error", () => {
    for (const operation of ["getTransaction", "heartbeat"] as const) {
      expect(RetryPolicy.shouldRetry(operation, serverError)).toBe(true)
      expect(RetryPolicy.shouldRetry(operation, unavailable())).toBe(true)
      expect(RetryPolicy.shouldRetry(operation, new Errors.TransportError({ message: "x", reason: "Other" }))).toBe(
        true
      )
      expect(RetryPolicy.shouldRetry(operation, new Errors.TransportError({ message: "x", reason: "Aborted" }))).toBe(
        false
      )
    }
  })

  it("never card outcomes, MerchantUnavailable, request faults, undecodable bodies or 401", () => {
    const never: ReadonlyArray<RetryPolicy.RetryableError> = [
      invalidCard,
      new Errors.CardValueOutOfRange({ message: "x" }),
      new Errors.CardNotAccepted({ message: "x" }),
      new Errors.OfferExpired({ message: "x" }),
      merchantUnavailable,
      new Errors.MissingRequestId({ message: "x" }),
      new Errors.InvalidApiKey({ message: "x" }),
      new Errors.PartnerNotFound({ message: "x" }),
      new Errors.TransactionNotFound({ message: "x" }),
      new Errors.InvalidRequest({ message: "x" }),
      new Errors.UnexpectedResponse({ message: "x" }),
      new Errors.UnknownServiceError({ message: "x" }),
      unauthorized
    ]
    for (const operation of ["createQuote", "getTransaction", "heartbeat"] as const) {
      for (const error of never) expect(RetryPolicy.shouldRetry(operation, error), error._tag).toBe(false)
    }
  })

  it("POST quote retries a 2xx whose body did not decode (a lost answer), nothing else undecodable", () => {
    const garbled = (httpStatus?: number) =>
      new Errors.UnexpectedResponse({
        message: "the service's answer did not decode",
        ...(httpStatus !== undefined ? { httpStatus } : {})
      })
    expect(RetryPolicy.shouldRetry("createQuote", garbled(201))).toBe(true)
    expect(RetryPolicy.shouldRetry("createQuote", garbled(200))).toBe(true)
    expect(RetryPolicy.shouldRetry("createQuote", garbled(400))).toBe(false)
    expect(RetryPolicy.shouldRetry("createQuote", garbled(502))).toBe(false)
    expect(RetryPolicy.shouldRetry("createQuote", garbled())).toBe(false)
    for (const operation of ["getTransaction", "heartbeat"] as const) {
      expect(RetryPolicy.shouldRetry(operation, garbled(200))).toBe(false)
    }
  })

  it("token endpoint failures are transient only without an answer, on 429 or on 5xx", () => {
    expect(RetryPolicy.shouldRetry("createQuote", new Errors.TokenError({ message: "x" }))).toBe(true)
    expect(RetryPolicy.shouldRetry("createQuote", new Errors.TokenError({ message: "x", httpStatus: 503 }))).toBe(true)
    expect(RetryPolicy.shouldRetry("createQuote", new Errors.TokenError({ message: "x", httpStatus: 401 }))).toBe(
      false
    )
  })
})

describe("RetryPolicy.execute", () => {
  it.effect("retries with jittered exponential backoff, counting previousAttempts up", () =>
    Effect.gen(function*() {
      const { fiber, sent } = yield* scripted([unavailable(), reset, unavailable()])
      // backoff before retry n lies in [0.5, 1) x 1 s x 2^(n-1): attempts 2, 3 and 4 are sent
      // within [500, 1000), [1500, 3000) and [3500, 7000) ms
      const sentAt = (millis: number) => TestClock.setTime(millis).pipe(Effect.andThen(Ref.get(sent)))
      expect(yield* sentAt(499)).toEqual([0])
      expect(yield* sentAt(1000)).toEqual([0, 1])
      expect(yield* sentAt(1499)).toEqual([0, 1])
      expect(yield* sentAt(3000)).toEqual([0, 1, 2])
      expect(yield* sentAt(3499)).toEqual([0, 1, 2])
      yield* TestClock.setTime(7000)
      const result = yield* Fiber.join(fiber)
      expect(yield* Ref.get(sent)).toEqual([0, 1, 2, 3])
      const attempted = Option.getOrThrow(Option.fromNullishOr(result._tag === "Success" ? result.success : undefined))
      expect(attempted.value).toBe("ok")
      expect(attempted.attempts).toBe(4)
      const delay = Duration.toMillis(attempted.retryDelay)
      expect(delay).toBeGreaterThanOrEqual(3500)
      expect(delay).toBeLessThan(7000)
    }))

  it.effect("honours Retry-After: not one millisecond sooner", () =>
    Effect.gen(function*() {
      const { fiber, sent } = yield* scripted([unavailable(3000)], { settings: settings({ baseDelay: "10 millis" }) })
      yield* TestClock.adjust("2999 millis")
      expect(yield* Ref.get(sent)).toEqual([0])
      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(fiber)
      expect(result._tag).toBe("Success")
      if (result._tag === "Success") expect(result.success.retryDelay).toEqual(Duration.millis(3000))
    }))

  it.effect("a Retry-After beyond maxDelay is not waited for: the error surfaces with it", () =>
    Effect.gen(function*() {
      const { fiber, sent } = yield* scripted([unavailable(60_000)])
      const result = yield* Fiber.join(fiber)
      expect(yield* Ref.get(sent)).toEqual([0])
      expect(result._tag).toBe("Failure")
      if (result._tag === "Failure") {
        expect(result.failure._tag).toBe("ServiceUnavailable")
        expect(result.failure).toMatchObject({ retryAfterMillis: 60_000, attempts: 1, retryDelayMillis: 0 })
      }
    }))

  it.effect("caps the attempts per call and records them on the error", () =>
    Effect.gen(function*() {
      const { fiber, sent } = yield* scripted(Array.from({ length: 10 }, () => reset), {
        settings: settings({ maxAttempts: 3, baseDelay: "100 millis" })
      })
      yield* TestClock.adjust("10 seconds")
      const result = yield* Fiber.join(fiber)
      expect(yield* Ref.get(sent)).toEqual([0, 1, 2])
      expect(result._tag).toBe("Failure")
      if (result._tag === "Failure") {
        expect(result.failure).toBeInstanceOf(Errors.TransportError)
        expect(result.failure).toMatchObject({ attempts: 3 })
        expect((result.failure as Errors.TransportError).retryDelayMillis).toBeGreaterThanOrEqual(150)
      }
    }))

  it.effect("a POST is retried on a 500 with previousAttempts + 1; a 500 that persists is ServerError with its attempts", () =>
    Effect.gen(function*() {
      const passing = yield* scripted([serverError], { operation: "createQuote" })
      yield* TestClock.adjust("10 seconds")
      const passed = yield* Fiber.join(passing.fiber)
      expect(yield* Ref.get(passing.sent)).toEqual([0, 1])
      expect(passed._tag === "Success" && passed.success).toMatchObject({ value: "ok", attempts: 2 })
      const persisting = yield* scripted(Array.from({ length: 10 }, () => serverError), {
        operation: "createQuote",
        settings: settings({ maxAttempts: 3, baseDelay: "100 millis" })
      })
      yield* TestClock.adjust("10 seconds")
      const persisted = yield* Fiber.join(persisting.fiber)
      expect(yield* Ref.get(persisting.sent)).toEqual([0, 1, 2])
      expect(persisted._tag === "Failure" && persisted.failure).toMatchObject({ _tag: "ServerError", attempts: 3 })
    }))

  it.effect("an empty budget fails fast with the last error", () =>
    Effect.gen(function*() {
      const budget = yield* RetryBudget.make({ capacity: 2, refillPerSecond: 0 })
      const first = yield* scripted([unavailable(), unavailable(), unavailable(), unavailable()], {
        budget,
        settings: settings({ baseDelay: "10 millis" })
      })
      yield* TestClock.adjust("1 second")
      const firstResult = yield* Fiber.join(first.fiber)
      expect(yield* Ref.get(first.sent)).toEqual([0, 1, 2])
      expect(firstResult._tag === "Failure" && firstResult.failure).toMatchObject({
        _tag: "ServiceUnavailable",
        attempts: 3,
        retryBudgetExhausted: true
      })
      // the budget is client-wide: the next call gets no retry at all, and says why
      const second = yield* scripted([unavailable()], { budget })
      const secondResult = yield* Fiber.join(second.fiber)
      expect(yield* Ref.get(second.sent)).toEqual([0])
      expect(secondResult._tag === "Failure" && secondResult.failure).toMatchObject({
        _tag: "ServiceUnavailable",
        attempts: 1,
        retryBudgetExhausted: true
      })
      // a call stopped by its cap, with the budget full, is not marked
      const capped = yield* scripted([unavailable(), unavailable(), unavailable(), unavailable()], {
        settings: settings({ baseDelay: "10 millis" })
      })
      yield* TestClock.adjust("1 second")
      const cappedResult = yield* Fiber.join(capped.fiber)
      assert(cappedResult._tag === "Failure")
      expect(cappedResult.failure).toMatchObject({ _tag: "ServiceUnavailable", attempts: 4 })
      expect(cappedResult.failure).not.toHaveProperty("retryBudgetExhausted")
    }))

  it.effect("never retries card outcomes or MerchantUnavailable", () =>
    Effect.gen(function*() {
      for (const error of [invalidCard, merchantUnavailable]) {
        const { fiber, sent } = yield* scripted([error])
        const result = yield* Fiber.join(fiber)
        expect(yield* Ref.get(sent)).toEqual([0])
        expect(result._tag === "Failure" && result.failure._tag).toBe(error._tag)
      }
    }))

  it.effect("a 401 is retried once, at once and without the budget; a second 401 fails", () =>
    Effect.gen(function*() {
      const empty = yield* RetryBudget.make({ capacity: 0, refillPerSecond: 0 })
      const once = yield* scripted([unauthorized], { budget: empty })
      const recovered = yield* Fiber.join(once.fiber)
      expect(yield* Ref.get(once.sent)).toEqual([0, 1])
      expect(recovered._tag === "Success" && recovered.success).toMatchObject({
        attempts: 2,
        retryDelay: Duration.zero
      })

      const twice = yield* scripted([unauthorized, unauthorized], { budget: empty })
      const refused = yield* Fiber.join(twice.fiber)
      expect(yield* Ref.get(twice.sent)).toEqual([0, 1])
      expect(refused._tag === "Failure" && refused.failure).toMatchObject({ _tag: "Unauthorized", attempts: 2 })
    }))

  it.effect("a 401 after another failure gets its own recovery: only two 401s in a row fail", () =>
    Effect.gen(function*() {
      // the chaos run's loss: a POST processed but unanswered, then a fresh token expired again under load
      const { fiber, sent } = yield* scripted([unauthorized, reset, unauthorized], { operation: "createQuote" })
      yield* TestClock.adjust("10 seconds")
      const result = yield* Fiber.join(fiber)
      expect(yield* Ref.get(sent)).toEqual([0, 1, 2, 3])
      expect(result._tag === "Success" && result.success).toMatchObject({ value: "ok", attempts: 4 })
    }))

  it.effect("a POST that may have been processed is not given up on two 401s in a row: retried within the cap", () =>
    Effect.gen(function*() {
      const lostAnswer = new Errors.TransportError({ message: "timed out", reason: "Timeout" })
      const { fiber, sent } = yield* scripted([lostAnswer, unauthorized, unauthorized, unauthorized], {
        operation: "createQuote"
      })
      yield* TestClock.adjust("10 seconds")
      const result = yield* Fiber.join(fiber)
      expect(yield* Ref.get(sent)).toEqual([0, 1, 2, 3, 4])
      expect(result._tag === "Success" && result.success).toMatchObject({ value: "ok", attempts: 5 })
      // with nothing uncertain, two 401s in a row still fail
      const certain = yield* scripted([unauthorized, unauthorized], { operation: "createQuote" })
      const refused = yield* Fiber.join(certain.fiber)
      expect(refused._tag === "Failure" && refused.failure).toMatchObject({ _tag: "Unauthorized", attempts: 2 })
    }))

  it.effect("tells the retry hook about every retry", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<RetryPolicy.RetryInfo>>([])
      const { fiber } = yield* scripted([unauthorized, unavailable(2000)], {
        operation: "createQuote",
        onRetry: (info) => Ref.update(seen, (all) => [...all, info])
      })
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(fiber)
      const infos = yield* Ref.get(seen)
      expect(infos.map((info) => [info.operation, info.attempt, info.error._tag, Duration.toMillis(info.delay)]))
        .toEqual(
          [
            ["createQuote", 2, "Unauthorized", 0],
            ["createQuote", 3, "ServiceUnavailable", 2000]
          ]
        )
    }))

  it.effect("a resumed POST ended by a card or merchant outcome is answered: no outcomeUnknown, no resumption", () =>
    Effect.gen(function*() {
      const resume = (failure: RetryPolicy.RetryableError) =>
        Effect.flatMap(
          scripted([failure], { operation: "createQuote", requestId: "r-verdict", previousAttempts: 2 }),
          ({ fiber }) => Fiber.join(fiber)
        )
      // as the client makes them: a POST's errors name its requestId
      const named = { requestId: "r-verdict", httpStatus: 400 }
      for (
        const verdict of [
          new Errors.InvalidCard({ message: "invalid card", ...named }),
          new Errors.MerchantUnavailable({ message: "merchant unavailable", ...named })
        ]
      ) {
        const ended = yield* resume(verdict)
        assert(ended._tag === "Failure")
        expect(ended.failure).toMatchObject({ _tag: verdict._tag, attempts: 3 })
        expect(ended.failure).not.toHaveProperty("outcomeUnknown")
        expect(Errors.postResumption(ended.failure)).toEqual(Option.none())
      }
      // any other end of a resumed POST may still leave its earlier attempts' transaction unknown
      const refused = yield* resume(new Errors.InvalidRequest({ message: "HTTP 400", ...named }))
      assert(refused._tag === "Failure")
      expect(Errors.postResumption(refused.failure)).toEqual(
        Option.some({ requestId: "r-verdict", previousAttempts: 3 })
      )
    }))

  it.effect("previousAttempts resumes the count: sent from it up, attempts include it, the cap is per call", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<ReadonlyArray<number>>([])
      const resumed = yield* scripted([reset, unavailable()], {
        operation: "createQuote",
        previousAttempts: 4,
        settings: settings({ maxAttempts: 3, baseDelay: "10 millis" }),
        onRetry: (info) => Ref.update(seen, (all) => [...all, info.attempt])
      })
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(resumed.fiber)
      expect(yield* Ref.get(resumed.sent)).toEqual([4, 5, 6])
      expect(yield* Ref.get(seen)).toEqual([6, 7])
      expect(result._tag === "Success" && result.success).toMatchObject({ value: "ok", attempts: 7 })

      // failing again, the error's attempts is what the next resume passes on
      const failing = yield* scripted([reset, reset, reset], {
        operation: "createQuote",
        previousAttempts: 2,
        settings: settings({ maxAttempts: 2, baseDelay: "10 millis" })
      })
      yield* TestClock.adjust("1 second")
      const failed = yield* Fiber.join(failing.fiber)
      expect(yield* Ref.get(failing.sent)).toEqual([2, 3])
      expect(failed._tag === "Failure" && failed.failure).toMatchObject({ _tag: "TransportError", attempts: 4 })
    }))

  it.effect("a retry is logged with the error's tag, code and status, never its message", () =>
    Effect.gen(function*() {
      const lines: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
      const logger = Logger.make(({ fiber, message }) => {
        lines.push({ message, annotations: { ...fiber.getRef(References.CurrentLogAnnotations) } })
      })
      const echoing = new Errors.ServiceUnavailable({
        message: "upstream said: card 6006000000000001 refused",
        errorCode: "Service Unavailable",
        httpStatus: 503
      })
      const { fiber } = yield* scripted([echoing], { settings: settings({ baseDelay: "10 millis" }) }).pipe(
        Effect.provide(Logger.layer([logger])),
        Effect.provideService(References.MinimumLogLevel, "All")
      )
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(lines).toHaveLength(1)
      expect(lines[0]!.annotations).toEqual({
        attempt: 2,
        delayMillis: expect.any(Number),
        error: "ServiceUnavailable",
        errorCode: "Service Unavailable",
        httpStatus: 503
      })
      expect(JSON.stringify(lines)).not.toContain("upstream said")
      expect(JSON.stringify(lines)).not.toContain("6006000000000001")
    }))

  it.effect("backoff is capped by maxDelay", () =>
    Effect.gen(function*() {
      const capped = settings({ baseDelay: "1 second", maxDelay: "3 seconds" })
      for (let retry = 1; retry <= 10; retry++) {
        const delay = Duration.toMillis(yield* RetryPolicy.backoff(capped, retry))
        expect(delay).toBeLessThanOrEqual(3000)
        expect(delay).toBeGreaterThanOrEqual(Math.min(3000, 1000 * 2 ** (retry - 1)) / 2)
      }
    }))
})
