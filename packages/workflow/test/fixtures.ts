/**
 * Durable quotes embedded on SQLite in a temporary file, over a real client
 * and a real sandbox on a free port.
 */
import type { ExchangeConfig } from "@gcx/http"
import { ExchangeClient } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { DurableQuotes } from "../src/index.js"
import { CardCipher, Embedded } from "../src/index.js"

/** A quiet, fast sandbox on a free port. */
export const sandbox = (options: Sandbox.SandboxOptions = {}) =>
  Sandbox.layer({ logLevel: "None", timeScale: 0.01, ...options })

/** Client options for a running sandbox and its default partner, with fast retries. */
export const clientOptions = (
  server: Sandbox.Service,
  overrides: Partial<ExchangeConfig.Options> = {}
): ExchangeConfig.Options => ({
  ...Sandbox.clientOptions(server),
  retry: { baseDelay: "10 millis", maxDelay: "200 millis", budget: { capacity: 1000, refillPerSecond: 100 } },
  ...overrides
})

/** A temporary directory, removed with the scope. */
export const tempDirectory = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-workflow-"))),
  (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
)

/** The path of a fresh database file (`gcx.db`) in a temporary directory, removed with the scope. */
export const tempDatabase = Effect.map(tempDirectory, (directory) => Path.join(directory, "gcx.db"))

/** The data key of the tests. */
export const dataKey = CardCipher.generateKey()

/** Durable quotes embedded in `filename`, over a real client for `server`. */
export const quotesLayer = (
  server: Sandbox.Service,
  filename: string,
  options: {
    readonly client?: Partial<ExchangeConfig.Options>
    readonly key?: string
    /** The previous data key, which still opens (`GCX_DATA_KEY_PREVIOUS`). */
    readonly previousKey?: string
    readonly sharding?: Embedded.Options["sharding"]
    /** How the runner polls its quotes (e.g. a fixed schedule, for quotes of several polls). */
    readonly track?: DurableQuotes.RunnerOptions["track"]
  } = {}
) =>
  Embedded.layerQuotes({ filename, sharding: options.sharding, track: options.track }).pipe(
    Layer.provide(CardCipher.layer(options.key ?? dataKey, options.previousKey)),
    Layer.provideMerge(ExchangeClient.layerWith(clientOptions(server, options.client))),
    Layer.provide(FetchHttpClient.layer),
    Layer.orDie
  )

/** Runs `effect` with durable quotes embedded in a fresh database, for the sandbox in context. */
export const withQuotes = (options: Parameters<typeof quotesLayer>[2] = {}) =>
<A, E, R>(
  effect: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const server = yield* Sandbox.SandboxServer
    // local: a fresh deployment per test (layers are memoized across provides)
    return yield* Effect.provide(effect, quotesLayer(server, yield* tempDatabase, options), { local: true })
  }).pipe(Effect.scoped)

/** Card input for a scenario card. */
export const card = (cardNumber: string, pinNumber: string = TestData.pin) => ({
  cardNumber,
  pinNumber,
  productLineId: TestData.defaultProductLineId
})

/** Every row of every table of the database in context, as text. */
export const dumpTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
  const dumps = yield* Effect.forEach(
    tables,
    ({ name }) =>
      Effect.map(
        // snowflake ids exceed 2^53: node:sqlite reads them only as bigints
        sql.unsafe(`SELECT * FROM "${name}"`).pipe(Effect.provideService(SqlClient.SafeIntegers, true)),
        (rows) =>
          `${name}\n${
            rows.map((row) =>
              JSON.stringify(
                row,
                (_, value) =>
                  value instanceof Uint8Array
                    ? Buffer.from(value).toString("utf8")
                    : typeof value === "bigint"
                    ? value.toString()
                    : value
              )
            ).join("\n")
          }`
      )
  )
  return { tables: tables.map(({ name }) => name), text: dumps.join("\n") }
})

/**
 * JWT-shaped strings (header and claims): an access token, whoever issued it.
 * Not a bare `eyJ`: sealed cards are random base64, which holds `eyJ` now and then.
 */
export const jwtShape = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}/

export type { DurableQuotes }
