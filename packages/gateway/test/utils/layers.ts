/**
 * In-memory stand-ins for the services the keys and events engineers build
 * (`ApiKeys`, `RateLimit`, `EventLog`), so that the API is tested over real
 * HTTP, a real sandbox and a real embedded deployment before theirs land.
 * They are test doubles of a contract, not of I/O: the gateway's handling of
 * what they answer is what is tested.
 */
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as Embedded from "@gcx/workflow/Embedded"
import * as EventLog from "@gcx/workflow/EventLog"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type ApiKey, ApiKeys, UnknownApiKey } from "../../src/ApiKeys.js"
import { RateLimit, RateLimited } from "../../src/RateLimit.js"

/** A caller with id `id`. */
export const apiKey = (id: string): ApiKey => ({ id, name: id, ratePerSecond: 20, burst: 40, webhooks: [] })

/** `ApiKeys` over a map of presented keys to their callers. */
export const apiKeysLayer = (keys: Readonly<Record<string, ApiKey>>): Layer.Layer<ApiKeys> =>
  Layer.mock(ApiKeys, {
    authenticate: (presented) => {
      const key = keys[Redacted.value(presented)]
      return key === undefined ? Effect.fail(new UnknownApiKey()) : Effect.succeed(key)
    },
    find: (id) => Effect.succeed(Option.fromUndefinedOr(Object.values(keys).find((key) => key.id === id)))
  })

/** `RateLimit` that refuses the callers of `limited` (with their Retry-After, in seconds) and lets the others pass. */
export const rateLimitLayer = (limited: Readonly<Record<string, number>> = {}): Layer.Layer<RateLimit> =>
  Layer.succeed(
    RateLimit,
    RateLimit.of({
      take: (key) =>
        limited[key.id] === undefined
          ? Effect.void
          : Effect.fail(new RateLimited({ retryAfterSeconds: limited[key.id]! }))
    })
  )

/**
 * `EventLog` in memory, fed by the deployment's bus: each event of a quote
 * (found by the `Submitted` event's requestId, then by its transactionId) is
 * kept with its sequence number. `follow` and `cursor` poll the memory every 20 ms.
 */
export const eventLogLayer: Layer.Layer<EventLog.EventLog, never, QuoteEvents.QuoteEvents> = Layer.effect(
  EventLog.EventLog,
  Effect.gen(function*() {
    const bus = yield* QuoteEvents.QuoteEvents
    const byRequest = new Map<string, Array<EventLog.Entry>>()
    const requestOf = new Map<string, string>()
    const events = yield* bus.subscribe
    yield* Effect.forkScoped(Stream.runForEach(events, (event) =>
      Effect.sync(() => {
        if (event._tag === "Submitted") requestOf.set(event.transactionId, event.requestId)
        const requestId = requestOf.get(event.transactionId)
        if (requestId === undefined) return
        const entries = byRequest.get(requestId) ?? []
        if (entries.some((entry) => entry.event._tag === "Completed" || entry.event._tag === "Failed")) return
        entries.push({ seq: entries.length + 1, event })
        byRequest.set(requestId, entries)
      })))
    const read = (requestId: string, afterSeq: number) =>
      Effect.sync(() => (byRequest.get(requestId) ?? []).filter((entry) => entry.seq > afterSeq))
    const isTerminal = (entry: EventLog.Entry) => entry.event._tag === "Completed" || entry.event._tag === "Failed"
    const follow = (requestId: string, afterSeq: number) =>
      Stream.paginate({ after: afterSeq, first: true }, ({ after, first }) =>
        read(requestId, after).pipe(
          Effect.delay(first ? 0 : 20),
          Effect.map((entries) => {
            const next = { after: entries.at(-1)?.seq ?? after, first: false }
            const all = byRequest.get(requestId) ?? []
            const ended = all.some(isTerminal) && next.after >= all.length
            return [entries, ended ? Option.none() : Option.some(next)] as const
          })
        ))
    const cursor = (requestId: string, afterSeq: number) =>
      Effect.sync((): EventLog.Cursor => {
        let last = afterSeq
        let ended = false
        let woken = false
        const next = Effect.gen(function*() {
          while (!ended) {
            const entries = yield* read(requestId, last)
            if (entries.length > 0) {
              last = entries.at(-1)!.seq
              ended = entries.some(isTerminal)
              return entries
            }
            ended = (byRequest.get(requestId) ?? []).some(isTerminal)
            if (!ended) yield* Effect.sleep(20)
            if (woken) {
              woken = false
              return []
            }
          }
          return undefined
        })
        const poll = Effect.map(read(requestId, last), (entries) => {
          if (ended) return undefined
          if (entries.length > 0) {
            last = entries.at(-1)!.seq
            ended = entries.some(isTerminal)
          }
          return entries
        })
        return { poll, next, wake: () => void (woken = true) }
      })
    return EventLog.EventLog.of({ read, follow, cursor })
  })
)

/**
 * SQLite as the embedded deployment opens it (`gcx.db`), in a fresh temporary
 * folder (`prefix`) removed with the layer: the folder and the layer.
 */
export const sqliteInTemporaryFolder = (prefix: string) => {
  const folder = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
  const layer = Embedded.layerSqlite(Path.join(folder, "gcx.db"), { oneShard: false }).pipe(
    Layer.provideMerge(
      Layer.effectDiscard(
        Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(folder, { recursive: true, force: true })))
      )
    ),
    Layer.orDie
  )
  return { folder, layer }
}
