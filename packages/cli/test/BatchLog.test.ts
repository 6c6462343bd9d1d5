/**
 * The results file's writer and the streamed reading of files, in process on
 * real files: group commits (many records, few fsyncs), a torn last line
 * ignored and dropped, compaction to one line per card through a rename; a
 * line over 64 KiB refused as soon as it is read.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import { DateTime, Effect, FileSystem, Layer, Option, Result, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as BatchFile from "../src/BatchFile.js"
import * as BatchLines from "../src/BatchLines.js"
import * as BatchLog from "../src/BatchLog.js"
import * as BatchResults from "../src/BatchResults.js"

const workspace = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-batchlog-test-"))

/** The real file system, counting the fsyncs of the files it opens. */
const countingFileSystem = (counter: { syncs: number }) =>
  Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (fs) =>
      FileSystem.FileSystem.of({
        ...fs,
        open: (path, options) =>
          Effect.map(fs.open(path, options), (file) =>
            new Proxy(file, {
              get: (target, property) => {
                if (property === "sync") return Effect.andThen(Effect.sync(() => counter.syncs++), target.sync)
                const value = Reflect.get(target, property, target)
                return typeof value === "function" ? value.bind(target) : value
              }
            }))
      }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

const result = (key: string, line: number, status: "completed" | "failed" = "completed") =>
  new BatchResults.Result({
    key,
    line,
    card: "****0001",
    productLineId: "1000",
    status,
    ...(status === "failed" ? { group: "service", error: "ServerError" } : {}),
    finishedAt: DateTime.makeUnsafe("2026-01-01T00:00:00Z")
  })

const posting = (key: string, line: number, requestId: string, previousAttempts: number) =>
  new BatchResults.Progress({ key, line, status: "posting", requestId, previousAttempts })

const fileLines = (path: string) => Fs.readFileSync(path, "utf8").split("\n").filter((line) => line !== "")

describe("BatchLog", () => {
  it.effect("a thousand records committed at once share a few fsyncs; compaction keeps one line per card", () =>
    Effect.gen(function*() {
      const counter = { syncs: 0 }
      const path = Path.join(workspace(), "results.jsonl")
      const header = BatchResults.header("0123456789abcdef")
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* BatchLog.make(path, header, Option.none())
        const created = counter.syncs
        const keys = Array.from({ length: 1000 }, (_, i) => `card${i}`)
        yield* Effect.forEach(keys, (key, i) => log.commit(posting(key, i + 2, `r${i}`, 0)), {
          concurrency: "unbounded"
        })
        const commits = counter.syncs - created
        expect(commits).toBeGreaterThan(0)
        expect(commits).toBeLessThan(50)
        expect(fileLines(path)).toHaveLength(1001)
        for (const [i, key] of keys.entries()) yield* log.append(result(key, i + 2))
        yield* log.compact
      })).pipe(Effect.provide(countingFileSystem(counter)))
      const lines = fileLines(path)
      expect(lines).toHaveLength(1001)
      expect(JSON.parse(lines[0]!)).toMatchObject({ format: "gcx-batch-results", version: 3 })
      expect(lines.slice(1).every((line) => JSON.parse(line).status === "completed")).toBe(true)
      expect(Fs.readdirSync(Path.dirname(path))).toEqual(["results.jsonl"])
      expect(Fs.statSync(path).mode & 0o777).toBe(0o600)
    }))

  it.effect("a torn last line is ignored when read back and dropped before anything is appended", () =>
    Effect.gen(function*() {
      const directory = workspace()
      const input = Path.join(directory, "cards.csv")
      const path = Path.join(directory, "results.jsonl")
      Fs.writeFileSync(input, "cardNumber,pinNumber,productLineId\n")
      const header = BatchResults.header("0123456789abcdef")
      Fs.writeFileSync(
        path,
        [
          BatchResults.encodeHeaderLine(header),
          BatchResults.encode(posting("a", 2, "r1", 0)),
          BatchResults.encode(result("b", 3, "failed")),
          BatchResults.encode(result("a", 2))
        ].join("\n") + "\n" + BatchResults.encode(posting("b", 3, "r2", 4)).slice(0, 25)
      )
      const target = yield* BatchResults.target(input, path)
      const loaded = Option.getOrThrow(target.loaded)
      expect(loaded.rewrite).toBe(true)
      expect(BatchResults.resumeFor(target.loaded, "a")._tag).toBe("Finished")
      // the torn `posting` of b is not read: b failed on the service, and is quoted afresh
      expect(BatchResults.resumeFor(target.loaded, "b")._tag).toBe("Fresh")
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* BatchLog.make(target.path, header, target.loaded)
        expect(fileLines(path)).toHaveLength(3)
        yield* log.commit(posting("c", 4, "r3", 0))
        yield* log.compact
      }))
      expect(fileLines(path).slice(1).map((line) => JSON.parse(line))).toEqual([
        expect.objectContaining({ key: "b", status: "failed" }),
        expect.objectContaining({ key: "a", status: "completed" }),
        expect.objectContaining({ key: "c", status: "posting", requestId: "r3" })
      ])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it("a re-run tracks a known transaction and re-POSTs a requestId with one more previousAttempts", () => {
    const at = DateTime.makeUnsafe("2026-01-01T00:00:00Z")
    const failed = (fields: Partial<ConstructorParameters<typeof BatchResults.Result>[0]>) =>
      BatchResults.resumeOf(
        new BatchResults.Result({ ...result("k", 2, "failed"), finishedAt: at, ...fields })
      )
    expect(BatchResults.resumeOf(posting("k", 2, "r", 3))).toEqual({
      _tag: "Repost",
      requestId: "r",
      previousAttempts: 3
    })
    expect(BatchResults.resumeOf(
      new BatchResults.Progress({ key: "k", line: 2, status: "submitted", requestId: "r", transactionId: "T" })
    )).toEqual({ _tag: "Track", transactionId: "T", requestId: "r" })
    expect(failed({ transactionId: "T", error: "PollTimeout", requestId: "r" })._tag).toBe("Track")
    expect(failed({ transactionId: "T", error: "MerchantUnavailable", group: "merchant" })._tag).toBe("Fresh")
    expect(failed({ requestId: "r", previousAttempts: 3 })).toEqual({
      _tag: "Repost",
      requestId: "r",
      previousAttempts: 3
    })
    expect(failed({ group: "card" })._tag).toBe("Finished")
  })
})

describe("BatchLines", () => {
  it.effect("a line over 64 KiB is refused, naming it, as soon as its first 64 KiB are read", () =>
    Effect.gen(function*() {
      let pulled = 0
      const chunk = new Uint8Array(16 * 1024).fill(0x61)
      // an endless file: two short lines, then a line that never ends
      const fs = FileSystem.makeNoop({
        stream: () =>
          Stream.concat(
            Stream.make(new TextEncoder().encode("cardNumber,pinNumber,productLineId\n1,2,3\n")),
            Stream.fromEffectRepeat(Effect.sync(() => {
              pulled += chunk.length
              return chunk
            }))
          )
      })
      const error = yield* BatchFile.rows("cards.csv").pipe(
        Stream.runDrain,
        Effect.flip,
        Effect.provideService(FileSystem.FileSystem, fs)
      )
      expect(error.message).toBe("batch file: line 3 is longer than 64 KiB")
      expect(pulled).toBeLessThanOrEqual(BatchLines.maxLineBytes + 2 * chunk.length)
    }))

  it.effect("splits on \\n across chunks, drops \\r, and marks a last line without a line break", () =>
    Effect.gen(function*() {
      const bytes = new TextEncoder().encode("héllo\r\nwörld\n\nend")
      const fs = FileSystem.makeNoop({
        // one byte at a time: every split falls inside a line or a character
        stream: () => Stream.fromIterable(Array.from(bytes, (byte) => Uint8Array.of(byte)))
      })
      const lines = yield* Stream.runCollect(BatchLines.stream(fs, "x", (line) => line))
      expect(lines.map(({ number, terminated, text }) => [number, text, terminated])).toEqual([
        [1, "héllo", true],
        [2, "wörld", true],
        [3, "", true],
        [4, "end", false]
      ])
      expect(lines.at(-1)!.end).toBe(bytes.length)
      expect(Result.isSuccess(BatchFile.parse("cardNumber,pinNumber,productLineId\n1,2,3"))).toBe(true)
    }))
})
