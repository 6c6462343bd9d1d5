/**
 * A gateway over real HTTP on a free loopback port: the server of
 * `Gateway.layer`, over durable quotes embedded on SQLite in a temporary
 * file, a real exchange client and the sandbox in context, with the
 * in-memory `ApiKeys`, `RateLimit` and `EventLog` of `layers.ts`, or (with
 * `stores: "real"`) their real layers on the gateway's database, as
 * `gcx serve` runs them. Its log lines are captured (message and
 * annotations, as text) for sentinel scans.
 */
import { expect } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import type * as QuoteEvents from "@gcx/poller/QuoteEvents"
import { Sandbox, TestData } from "@gcx/sandbox"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as Embedded from "@gcx/workflow/Embedded"
import * as EventLog from "@gcx/workflow/EventLog"
import { Effect, Layer, Logger, References } from "effect"
import type * as Duration from "effect/Duration"
import { FetchHttpClient, HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as ApiKeys from "../../src/ApiKeys.js"
import * as Gateway from "../../src/Gateway.js"
import * as GatewayQuotes from "../../src/GatewayQuotes.js"
import * as RateLimit from "../../src/RateLimit.js"
import { apiKey, apiKeysLayer, eventLogLayer, rateLimitLayer } from "./layers.js"

/** The data key of the tests. */
export const dataKey = CardCipher.generateKey()

/** Presented keys of the tests' callers: A, B, and C (whose rate limit is spent, Retry-After 7 s). */
export const keys = {
  a: `gcx_sk_${"A".repeat(43)}`,
  b: `gcx_sk_${"B".repeat(43)}`,
  limited: `gcx_sk_${"C".repeat(43)}`
} as const

/** A quiet, fast sandbox on a free port. */
export const sandbox = Sandbox.layer({ logLevel: "None", timeScale: 0.01 })

/** A card body for the sandbox's scenario card `cardNumber`. */
export const cardBody = (cardNumber: string, pinNumber: string = TestData.pin) => ({
  cardNumber,
  pinNumber,
  productLineId: TestData.defaultProductLineId
})

/** A temporary directory, removed with the scope. */
export const tempDirectory = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-gateway-"))),
  (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
)

/** A running gateway. */
export interface Running {
  readonly url: string
  readonly sandbox: Sandbox.Service
  readonly filename: string
  /** The log lines so far, each its message and annotations as JSON. */
  readonly logs: ReadonlyArray<string>
  /** How many rows `table` of the gateway's database holds. */
  readonly count: (table: string) => Effect.Effect<number>
  /** The gateway's own `ApiKeys` (the real store's `create` and `revoke` with `stores: "real"`). */
  readonly keys: ApiKeys.Service
}

/** Settings of a test gateway. */
export interface StartOptions {
  /** How often it checks the service (`/readyz`). Default 10 s. */
  readonly heartbeatInterval?: Duration.Input
  /**
   * The callers' stores: the in-memory stand-ins of `layers.ts` (callers `keys`, C rate limited; default), or
   * `"real"`: `ApiKeys.layer`, `RateLimit.layer` and `EventLog.layer()` on the gateway's database (no caller yet).
   */
  readonly stores?: "standIns" | "real"
  /** The gateway's database file, for a restart on the same one. Default: a new file in a temporary directory. */
  readonly filename?: string
  /** The pauses before a POST whose answers were lost is sent again (`track.resumeDelays`). Default the runner's. */
  readonly resumeDelays?: ReadonlyArray<Duration.Input>
  /** How long the server waits on a client (`Gateway.Timeouts`). Default the gateway's. */
  readonly timeouts?: Partial<Gateway.Timeouts>
  /** How many streams and waiting POSTs a key may hold (`Gateway.Options.maxHeldPerKey`). Default the gateway's. */
  readonly maxHeldPerKey?: number
}

/** The in-memory stand-ins of the callers' stores, for the callers of `keys`. */
const standIns = Layer.mergeAll(
  eventLogLayer,
  apiKeysLayer({ [keys.a]: apiKey("key_a"), [keys.b]: apiKey("key_b"), [keys.limited]: apiKey("key_c") }),
  rateLimitLayer({ key_c: 7 })
)

/** The real callers' stores on the deployment's database, as `gcx serve` builds them. */
const realStores = Layer.mergeAll(ApiKeys.layer, RateLimit.layer, EventLog.layer())

/** The callers' stores of `options`. */
const storesOf = (options: StartOptions): Layer.Layer<
  ApiKeys.ApiKeys | RateLimit.RateLimit | EventLog.EventLog,
  SqlError.SqlError | CardCipher.UnsealError,
  SqlClient.SqlClient | CardCipher.CardCipher | QuoteEvents.QuoteEvents
> => options.stores === "real" ? realStores : standIns

/** Runs a gateway (in the scope) for the sandbox in context. */
export const start = (options: StartOptions = {}) =>
  Effect.gen(function*() {
    const server = yield* Sandbox.SandboxServer
    const filename = options.filename ?? Path.join(yield* tempDirectory, "gcx.db")
    const logs: Array<string> = []
    const capture = Logger.make(({ fiber, message }) => {
      logs.push(JSON.stringify({ message, annotations: fiber.getRef(References.CurrentLogAnnotations) }))
    })
    const deployment = Embedded.layerQuotes({ filename, track: { resumeDelays: options.resumeDelays } }).pipe(
      Layer.provideMerge(CardCipher.layer(dataKey)),
      Layer.provideMerge(ExchangeClient.layerWith({
        ...Sandbox.clientOptions(server),
        retry: { baseDelay: "10 millis", maxDelay: "200 millis", budget: { capacity: 1000, refillPerSecond: 100 } }
      })),
      Layer.provide(FetchHttpClient.layer)
    )
    const gateway = Gateway.layer({
      port: 0,
      interval: options.heartbeatInterval ?? "10 seconds",
      timeouts: options.timeouts,
      maxHeldPerKey: options.maxHeldPerKey
    }).pipe(
      Layer.provide(GatewayQuotes.layer(dataKey)),
      Layer.provideMerge(storesOf(options)),
      Layer.provideMerge(deployment),
      Layer.provide(Logger.layer([capture])),
      Layer.provide(Layer.succeed(References.MinimumLogLevel, "All")),
      Layer.orDie
    )
    const context = yield* Layer.build(Layer.fresh(gateway))
    const address = (yield* Effect.provide(HttpServer.HttpServer, context)).address as { readonly port: number }
    const count = (table: string) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ readonly n: number }>`SELECT count(*) AS n FROM ${sql(table)}`
        return Number(rows[0]!.n)
      }).pipe(Effect.provide(context), Effect.orDie)
    const apiKeys = yield* Effect.provide(ApiKeys.ApiKeys, context)
    return {
      url: `http://127.0.0.1:${address.port}`,
      sandbox: server,
      filename,
      logs,
      count,
      keys: apiKeys
    } satisfies Running
  })

/** An answer, read whole. */
export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

/** A request to the gateway, over real HTTP (`fetch`), read whole. */
export const call = (
  url: string,
  init: Omit<RequestInit, "body"> & {
    readonly key?: string
    readonly idempotencyKey?: string
    /** Text or a stream as it is, anything else as JSON. */
    readonly body?: unknown
  } = {}
): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const headers = new Headers(init.headers)
    if (init.key !== undefined) headers.set("authorization", `Bearer ${init.key}`)
    if (init.idempotencyKey !== undefined) headers.set("idempotency-key", init.idempotencyKey)
    const body = init.body === undefined
      ? null
      : typeof init.body === "string" || init.body instanceof ReadableStream
      ? init.body
      : JSON.stringify(init.body)
    if (body !== null && !headers.has("content-type")) headers.set("content-type", "application/json")
    const response = await fetch(url, { ...init, headers, body })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, text, json }
  })

/** Polls `GET /v1/quotes/{id}` until the quote is no longer pending (at most `attempts` × 50 ms). */
export const awaitDone = (url: string, key: string, id: string, attempts = 400): Effect.Effect<Answer> =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const answer = yield* call(`${url}/v1/quotes/${id}`, { key })
      if (answer.status !== 200 || answer.json.status !== "pending") return answer
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`quote ${id} still pending`))
  })

/** A message of an event stream, as a client parses it. */
export interface Message {
  readonly id: number
  readonly event: string
  readonly data: any
}

/** The messages of an event stream's whole text (comments skipped). */
export const messagesOf = (text: string): ReadonlyArray<Message> =>
  text.split("\n\n").filter((block) => block.includes("data: ")).map((block) => {
    const field = (name: string) =>
      block.split("\n").find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2)
    return { id: Number(field("id")), event: field("event")!, data: JSON.parse(field("data")!) }
  })

/** Asserts a quote's whole stream: ids 1..n, `Submitted` first, one terminal event (`terminal`), last. */
export const expectWholeStream = (messages: ReadonlyArray<Message>, terminal: "Completed" | "Failed") => {
  expect(messages.map((message) => message.id)).toEqual(messages.map((_, index) => index + 1))
  expect(messages[0]?.event).toBe("Submitted")
  const terminals = messages.flatMap((message, index) =>
    message.event === "Completed" || message.event === "Failed" ? [index] : []
  )
  expect(terminals).toEqual([messages.length - 1])
  expect(messages.at(-1)?.event).toBe(terminal)
}
