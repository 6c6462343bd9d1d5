import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Result } from "effect"
import { Headers } from "effect/http"
import { TestClock } from "effect/testing"
import * as Transport from "../src/internal/transport.js"

const undiciError = (code: string) => new TypeError("fetch failed", { cause: Object.assign(new Error(code), { code }) })

describe("Transport", () => {
  it("reads the reason of a transport failure from its cause chain", () => {
    expect(Transport.reasonOf(undiciError("ECONNREFUSED"), "Other")).toEqual({
      reason: "Connect",
      code: "ECONNREFUSED"
    })
    expect(Transport.reasonOf(undiciError("ECONNRESET"), "Other")).toEqual({ reason: "Reset", code: "ECONNRESET" })
    expect(Transport.reasonOf(undiciError("UND_ERR_SOCKET"), "Other")).toEqual({
      reason: "Reset",
      code: "UND_ERR_SOCKET"
    })
    expect(Transport.reasonOf(undiciError("UND_ERR_HEADERS_TIMEOUT"), "Other").reason).toBe("Timeout")
    const aggregate = new TypeError("fetch failed", {
      cause: Object.assign(new AggregateError([Object.assign(new Error("x"), { code: "ECONNREFUSED" })]), {})
    })
    expect(Transport.reasonOf(aggregate, "Other").reason).toBe("Connect")
    expect(Transport.reasonOf(new DOMException("aborted", "AbortError"), "Other").reason).toBe("Aborted")
    expect(Transport.reasonOf(new Error("bad port"), "Other")).toEqual({ reason: "Other", code: undefined })
    expect(Transport.reasonOf(undefined, "Reset").reason).toBe("Reset")
  })

  it.effect("keeps authorization and x-api-key among the redacted header names", () =>
    Effect.gen(function*() {
      const names = yield* Transport.redactingSecrets(Effect.service(Headers.CurrentRedactedNames)).pipe(
        Effect.provideService(Headers.CurrentRedactedNames, ["cookie"])
      )
      expect(names).toEqual(["cookie", "authorization", "x-api-key"])
      const unchanged = yield* Transport.redactingSecrets(Effect.service(Headers.CurrentRedactedNames)).pipe(
        Effect.provideService(Headers.CurrentRedactedNames, [/^AUTHORIZATION$/i, "X-Api-Key"])
      )
      expect(unchanged).toEqual([/^AUTHORIZATION$/i, "X-Api-Key"])
    }))

  describe("timeoutFail", () => {
    it.live("fails with onTimeout and interrupts the effect when the live clock runs out", () =>
      Effect.gen(function*() {
        const interrupted = yield* Deferred.make<void>()
        const result = yield* Transport.timeoutFail(
          Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))),
          Duration.millis(20),
          () => "timed out"
        ).pipe(Effect.result)
        expect(result).toEqual(Result.fail("timed out"))
        expect(yield* Deferred.isDone(interrupted)).toBe(true)
      }))

    it.live("keeps the effect's value and failure when it ends in time", () =>
      Effect.gen(function*() {
        const timeout = Duration.seconds(5)
        expect(yield* Transport.timeoutFail(Effect.succeed(1).pipe(Effect.delay("5 millis")), timeout, () => 0)).toBe(1)
        expect(yield* Effect.result(Transport.timeoutFail(Effect.fail("boom"), timeout, () => "timed out"))).toEqual(
          Result.fail("boom")
        )
      }))

    it.live("interrupting the caller interrupts the effect", () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const interrupted = yield* Deferred.make<void>()
        const fiber = yield* Transport.timeoutFail(
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          ),
          Duration.seconds(5),
          () => "timed out"
        ).pipe(Effect.forkChild)
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        expect(yield* Deferred.isDone(interrupted)).toBe(true)
      }))

    it.effect("follows TestClock", () =>
      Effect.gen(function*() {
        const fiber = yield* Transport.timeoutFail(Effect.never, Duration.seconds(10), () => "timed out").pipe(
          Effect.result,
          Effect.forkChild
        )
        yield* TestClock.adjust("9999 millis")
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust("1 millis")
        expect(yield* Fiber.join(fiber)).toEqual(Result.fail("timed out"))
      }))
  })
})
