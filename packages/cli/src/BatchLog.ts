/**
 * The writer of a results file (`BatchResults`): lines are appended, never
 * rewritten, in group commits. Callers queue records; one fiber drains the
 * queue, and writes every record queued since its last commit with one write
 * and one fsync. So the cost of a card is a line, whatever the size of the
 * file, and a thousand cards finishing together cost one fsync.
 *
 * - `commit` returns once its record is on disk (the POST of a card waits
 *   for its `posting` line); `append` only queues it (a result: the next
 *   commit takes it, in order). The queue is bounded: a batch faster than the
 *   disk waits for it, and memory stays bounded.
 * - `compact` ends the log and rewrites the file with the latest line of
 *   each card alone, through a temporary file beside it, fsynced, then
 *   renamed over it (and the folder fsynced): a crash leaves the old file or
 *   the new one, whole. It reads the file streamed, keeping a line number per
 *   card, never the lines.
 * - A write that fails (disk full) fails the records waiting for it and
 *   every later `commit`, `append` and `compact`.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as PlatformError from "effect/PlatformError"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import * as BatchLines from "./BatchLines.js"
import * as BatchResults from "./BatchResults.js"

/** The writer of one results file. */
export interface BatchLog {
  /** Appends a record and returns once it is written and fsynced (with its group). */
  readonly commit: (record: BatchResults.Record) => Effect.Effect<void, PlatformError.PlatformError>
  /** Queues a record for the next group commit, in order, without waiting for it. */
  readonly append: (record: BatchResults.Record) => Effect.Effect<void, PlatformError.PlatformError>
  /** Commits what is queued, ends the log, and rewrites the file with one line per card. */
  readonly compact: Effect.Effect<void, PlatformError.PlatformError>
}

/** How many records may wait for the writer before callers wait for it. */
export const queueCapacity = 256

/** How many bytes compaction gathers before each write of the temporary file. */
const compactionChunk = 1 << 20

interface Item {
  readonly key: string
  /** The record's line, with its line break: encoded by the caller, so that the queue holds strings. */
  readonly line: string
  readonly done: Deferred.Deferred<void, PlatformError.PlatformError> | undefined
}

const encoder = new TextEncoder()

/** Fsyncs the folder of `path`, so that a rename in it is durable; a system that cannot is left as it is. */
const syncFolder = (fs: FileSystem.FileSystem, path: string) =>
  Effect.scoped(Effect.flatMap(fs.open(Path.dirname(path), { flag: "r" }), (folder) => folder.sync)).pipe(
    Effect.ignore
  )

/** Writes a file whole: a temporary file beside it, fsynced, renamed over it, and the folder fsynced. */
const replace = (
  fs: FileSystem.FileSystem,
  path: string,
  write: (file: FileSystem.File) => Effect.Effect<void, PlatformError.PlatformError>
) =>
  Effect.gen(function*() {
    const temporary = `${path}.${process.pid}.tmp`
    yield* Effect.scoped(
      Effect.flatMap(fs.open(temporary, { flag: "w", mode: 0o600 }), (file) => Effect.andThen(write(file), file.sync))
    ).pipe(Effect.onError(() => Effect.ignore(fs.remove(temporary))))
    yield* fs.rename(temporary, path)
    yield* syncFolder(fs, path)
  })

/** Starts a results file at `path` with `header` alone. */
const create = (path: string, header: BatchResults.Header) =>
  Effect.flatMap(
    FileSystem.FileSystem,
    (fs) => replace(fs, path, (file) => file.writeAll(encoder.encode(`${BatchResults.encodeHeaderLine(header)}\n`)))
  )

/**
 * Rewrites the results file at `path` with `header` and, of its lines after
 * the header, those that `keep` accepts (by fingerprint and line number),
 * through a temporary file and a rename. A torn last line is dropped. Gives
 * the new line number of each card kept, and the number of lines.
 */
export const rewrite = (
  path: string,
  header: BatchResults.Header,
  keep: (key: string, line: number) => boolean
): Effect.Effect<
  { readonly latest: Map<string, number>; readonly lines: number },
  PlatformError.PlatformError,
  FileSystem.FileSystem
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const latest = new Map<string, number>()
    let lines = 1
    yield* replace(fs, path, (file) =>
      Effect.gen(function*() {
        let buffer = `${BatchResults.encodeHeaderLine(header)}\n`
        const flush = Effect.suspend(() => {
          const bytes = encoder.encode(buffer)
          buffer = ""
          return file.writeAll(bytes)
        })
        yield* BatchLines.unlimited(fs, path).pipe(
          Stream.runForEach((line) => {
            if (line.number === 1 || !line.terminated) return Effect.void
            const key = BatchResults.keyOfLine(line.text)
            if (key === undefined || !keep(key, line.number)) return Effect.void
            lines += 1
            latest.set(key, lines)
            buffer += `${line.text}\n`
            return buffer.length >= compactionChunk ? flush : Effect.void
          })
        )
        yield* flush
      }))
    return { latest, lines }
  })

/**
 * The writer of the results file at `path`: a new file with `header` when
 * `loaded` is none; else the file as loaded, first rewritten when it must be
 * (a torn last line, an older version). Its writer fiber lives as long as
 * `Scope`; closing the scope commits what is queued.
 */
export const make = (
  path: string,
  header: BatchResults.Header,
  loaded: Option.Option<BatchResults.Loaded>
): Effect.Effect<BatchLog, PlatformError.PlatformError, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const start = yield* Option.match(loaded, {
      onNone: () => Effect.as(create(path, header), { latest: new Map<string, number>(), lines: 1 }),
      onSome: (loaded) =>
        loaded.rewrite
          ? rewrite(path, header, (key, line) => loaded.latest.get(key) === line)
          : Effect.succeed({ latest: loaded.latest, lines: loaded.lines })
    })
    const latest = start.latest
    let lines = start.lines
    let failure: PlatformError.PlatformError | undefined
    const file = yield* fs.open(path, { flag: "a", mode: 0o600 })
    const queue = yield* Queue.bounded<Item, Cause.Done>(queueCapacity)

    const write = (items: ReadonlyArray<Item>) =>
      Effect.suspend(() => {
        let text = ""
        for (const { key, line } of items) {
          text += line
          lines += 1
          latest.set(key, lines)
        }
        return Effect.andThen(file.writeAll(encoder.encode(text)), file.sync)
      }).pipe(
        Effect.matchEffect({
          onFailure: (error) => {
            failure = error
            return Effect.forEach(items, ({ done }) => done ? Deferred.fail(done, error) : Effect.void)
          },
          onSuccess: () => Effect.forEach(items, ({ done }) => done ? Deferred.succeed(done, undefined) : Effect.void)
        })
      )
    const writer = yield* Queue.takeAll(queue).pipe(
      Effect.flatMap(write),
      Effect.forever,
      Effect.catchIf(Cause.isDone, () => Effect.void),
      Effect.forkScoped
    )
    // On the way out (the end, Ctrl-C), what is queued is still written.
    yield* Effect.addFinalizer(() => Effect.andThen(Queue.end(queue), Fiber.await(writer)))

    const offer = (record: BatchResults.Record, done: Item["done"]) =>
      Effect.suspend(() =>
        failure === undefined
          ? Queue.offer(queue, { key: record.key, line: `${BatchResults.encode(record)}\n`, done })
          : Effect.fail(failure)
      )

    return {
      commit: (record) =>
        Effect.flatMap(
          Deferred.make<void, PlatformError.PlatformError>(),
          (done) => Effect.andThen(offer(record, done), Deferred.await(done))
        ),
      append: (record) => Effect.asVoid(offer(record, undefined)),
      compact: Effect.gen(function*() {
        yield* Queue.end(queue)
        yield* Fiber.await(writer)
        if (failure !== undefined) return yield* Effect.fail(failure)
        yield* rewrite(path, header, (key, line) => latest.get(key) === line)
      }).pipe(Effect.provideService(FileSystem.FileSystem, fs))
    }
  })
