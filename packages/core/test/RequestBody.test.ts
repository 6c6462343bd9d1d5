/** `RequestBody.readText` over real Node streams (a `PassThrough` stands for the request). */
import { describe, expect, it } from "@effect/vitest"
import { RequestBody } from "@gcx/core"
import { Effect, Exit, Fiber } from "effect"
import { PassThrough } from "node:stream"

const read = (chunks: ReadonlyArray<Uint8Array | string>, maxBytes: number, contentLength?: string) =>
  Effect.gen(function*() {
    const source = new PassThrough()
    const fiber = yield* Effect.forkChild(RequestBody.readText(source, contentLength, maxBytes))
    yield* Effect.yieldNow
    for (const chunk of chunks) source.write(chunk)
    source.end()
    return yield* Fiber.await(fiber)
  })

describe("RequestBody.readText", () => {
  it.effect("the body as text, a character split between chunks read whole", () =>
    Effect.gen(function*() {
      const euro = new TextEncoder().encode("price: 10 €")
      const exit = yield* read([euro.subarray(0, euro.length - 2), euro.subarray(euro.length - 2)], 64)
      expect(exit).toStrictEqual(Exit.succeed("price: 10 €"))
      expect(yield* read([], 64)).toStrictEqual(Exit.succeed(""))
      // bytes that are not UTF-8 are refused, never replaced
      expect(yield* read([Uint8Array.of(0x7b, 0xff, 0x7d)], 64)).toStrictEqual(Exit.fail({ _tag: "NotUtf8" }))
      // exactly the limit is read
      expect(yield* read(["x".repeat(16)], 16)).toStrictEqual(Exit.succeed("x".repeat(16)))
    }))

  it.effect("TooLarge for a declared length over the limit, before any byte is read", () =>
    Effect.gen(function*() {
      const source = new PassThrough()
      const exit = yield* Effect.exit(RequestBody.readText(source, "17", 16))
      expect(exit).toStrictEqual(Exit.fail({ _tag: "TooLarge" }))
      expect(source.listenerCount("data")).toBe(0)
    }))

  it.effect("TooLarge for a body that turns out longer, once it is drained to its end", () =>
    Effect.gen(function*() {
      const exit = yield* read(["x".repeat(10), "y".repeat(10), "z".repeat(10)], 16)
      expect(exit).toStrictEqual(Exit.fail({ _tag: "TooLarge" }))
    }))

  it.effect("TooLarge, without waiting for its end, for a body that goes on past the limit and the drain", () =>
    Effect.gen(function*() {
      const source = new PassThrough()
      const fiber = yield* Effect.forkChild(RequestBody.readText(source, undefined, 16))
      yield* Effect.yieldNow
      const chunk = new Uint8Array(64 * 1024)
      // never ended: more than the limit and the drain together, then nothing
      for (let sent = 0; sent <= RequestBody.maxDrainBytes + 16; sent += chunk.length) source.write(chunk)
      const exit = yield* Fiber.await(fiber)
      expect(exit).toStrictEqual(Exit.fail({ _tag: "TooLarge" }))
      expect(source.listenerCount("data")).toBe(0)
      source.destroy()
    }))

  it.effect("a stream that fails (the client left) interrupts the reading, and its listeners are removed", () =>
    Effect.gen(function*() {
      const source = new PassThrough()
      const fiber = yield* Effect.forkChild(RequestBody.readText(source, undefined, 64))
      yield* Effect.yieldNow
      source.destroy(new Error("aborted"))
      const exit = yield* Fiber.await(fiber)
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(source.listenerCount("data")).toBe(0)
    }))
})
