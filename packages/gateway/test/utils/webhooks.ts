/**
 * The pieces of the webhook tests: a real receiver on loopback (scripted per
 * event id), the API keys of one caller, and the embedded deployment of the
 * gateway (SQLite in a file, the sandbox in-process) with the deliveries.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { ExchangeClient } from "@gcx/http"
import { Sandbox } from "@gcx/sandbox"
import { CardCipher, Embedded } from "@gcx/workflow"
import { Effect, Layer, Option, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { ApiKeys, WebhookDelivery } from "../../src/index.js"

/** One request the receiver got: its headers and its raw body. */
export interface Received {
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

/** What the receiver answers a request with: a status, or nothing (the request is held until the client gives up). */
export type Answer = number | "hold"

/** A receiver on 127.0.0.1: every request recorded; `answer` decides each answer. */
export const receiver = (answer: (request: Received) => Answer) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly received: Array<Received>; readonly server: Http.Server }>(
      (resume) => {
        const received: Array<Received> = []
        const server = Http.createServer((request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            const got = { headers: request.headers, body: Buffer.concat(chunks) }
            received.push(got)
            const status = answer(got)
            if (status !== "hold") response.writeHead(status).end(status >= 300 ? "refused: try again later" : "ok")
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, received, server }))
        })
      }
    ),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** The caller of the tests: one key with the given endpoints. */
export const apiKeys = (key: ApiKeys.ApiKey) =>
  Layer.mock(ApiKeys.ApiKeys, {
    authenticate: () => Effect.fail(new ApiKeys.UnknownApiKey()),
    find: (id) => Effect.succeed(id === key.id ? Option.some(key) : Option.none())
  })

/** A key with one endpoint per URL (ids `we_1`, …), each with its secret. */
export const keyWith = (id: string, endpoints: ReadonlyArray<{ readonly url: string; readonly secret: string }>) => ({
  id,
  name: "test",
  ratePerSecond: 20,
  burst: 40,
  webhooks: endpoints.map(({ secret, url }, i) => ({ id: `we_${i + 1}`, url, secret: Redacted.make(secret) }))
})

/** A temporary directory, removed with the scope. */
export { tempDirectory } from "./gateway.js"

/** The data key of the tests. */
export const dataKey = CardCipher.generateKey()

/**
 * The embedded deployment of a gateway in `filename`, running quotes against
 * `server` and delivering their outcomes to the endpoints of `keys`.
 */
export const gateway = (
  server: Sandbox.Service,
  filename: string,
  keys: Layer.Layer<ApiKeys.ApiKeys>,
  options: WebhookDelivery.Options
) =>
  Embedded.layerQuotes(
    { filename },
    WebhookDelivery.layer(options).pipe(Layer.provide(keys), Layer.provide(NodeHttpClient.layerUndici))
  ).pipe(
    Layer.provide(CardCipher.layer(dataKey)),
    Layer.provide(
      ExchangeClient.layerWith({
        ...Sandbox.clientOptions(server),
        retry: { baseDelay: "10 millis", maxDelay: "200 millis", budget: { capacity: 1000, refillPerSecond: 100 } }
      })
    ),
    Layer.provide(FetchHttpClient.layer),
    Layer.orDie
  )

/** Records that key `keyId` POSTed quote `requestId` (what the API does before it submits the quote). */
export const own = (requestId: string, keyId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`INSERT INTO ${sql(WebhookDelivery.ownersTable)} (request_id, key_id, created_at)
      VALUES (${requestId}, ${keyId}, ${Date.now()})`
  )

/** Every row of every table of the SQLite database in context, as text. */
export const dumpTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
  const rows = yield* Effect.forEach(
    tables,
    ({ name }) => sql.unsafe(`SELECT * FROM "${name}"`).pipe(Effect.provideService(SqlClient.SafeIntegers, true))
  )
  return JSON.stringify(
    rows,
    (_, value) =>
      value instanceof Uint8Array ? Buffer.from(value).toString("utf8") : typeof value === "bigint" ? `${value}` : value
  )
})

/** Waits until `check` holds, reading it every 20 ms for at most 30 s (a real receiver's requests come when they come). */
export const eventually = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1500; i++) {
      if (check()) return
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.die(`timed out waiting for ${what}`)
  })

/** The end of the delivery of `eventId` to `we_1`, polled every 20 ms for at most 30 s. */
export const ended = (eventId: string) =>
  Effect.gen(function*() {
    const executionId = yield* WebhookDelivery.DeliveryWorkflow.executionId({
      eventId,
      endpointId: "we_1",
      keyId: "",
      body: ""
    })
    for (let i = 0; i < 1500; i++) {
      const result = yield* WebhookDelivery.DeliveryWorkflow.poll(executionId)
      if (Option.isSome(result) && result.value._tag === "Complete") return yield* result.value.exit
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.die(`the delivery of ${eventId} did not end`)
  })
