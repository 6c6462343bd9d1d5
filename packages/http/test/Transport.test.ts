import { Headers } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FiberRef } from "effect"
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
      const names = yield* Transport.redactingSecrets(FiberRef.get(Headers.currentRedactedNames)).pipe(
        Effect.locally(Headers.currentRedactedNames, ["cookie"])
      )
      expect(names).toEqual(["cookie", "authorization", "x-api-key"])
      const unchanged = yield* Transport.redactingSecrets(FiberRef.get(Headers.currentRedactedNames)).pipe(
        Effect.locally(Headers.currentRedactedNames, [/^AUTHORIZATION$/i, "X-Api-Key"])
      )
      expect(unchanged).toEqual([/^AUTHORIZATION$/i, "X-Api-Key"])
    }))
})
