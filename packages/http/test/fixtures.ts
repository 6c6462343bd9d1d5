/**
 * Helpers for the tests that run the client against a real sandbox over real
 * HTTP (a `FetchHttpClient` and a server on a free port).
 */
import type { Errors } from "@gcx/core"
import type { ExchangeConfig, TokenProvider } from "@gcx/http"
import { ExchangeClient } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import type { Journal } from "@gcx/sandbox"
import { Duration, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import * as Net from "node:net"

/** A sandbox on a free port, its request log silenced. */
export const sandbox = (options: Sandbox.SandboxOptions = {}) => Sandbox.layer({ logLevel: "None", ...options })

/** The client's layers for a running sandbox and the default partner, with fast retries. */
export const optionsFor = (
  server: Sandbox.Service,
  overrides: Partial<ExchangeConfig.Options> = {}
): ExchangeConfig.Options => ({
  ...Sandbox.clientOptions(server),
  requestTimeout: "5 seconds",
  retry: { maxAttempts: 4, baseDelay: "10 millis", maxDelay: "2 seconds", budget: { capacity: 100 } },
  ...overrides
})

/** The client, its token provider and its configuration, over a real `FetchHttpClient`. */
export const clientLayer = (options: ExchangeConfig.Options) =>
  ExchangeClient.layerWith(options).pipe(Layer.provide(FetchHttpClient.layer), Layer.orDie)

/** Runs `effect` with a client for `server`. */
export const withClient = (overrides: Partial<ExchangeConfig.Options> = {}) =>
<A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<
  A,
  E,
  | Sandbox.SandboxServer
  | Exclude<R, ExchangeClient.ExchangeClient | TokenProvider.TokenProvider | ExchangeConfig.ExchangeConfig>
> =>
  Effect.flatMap(Sandbox.SandboxServer, (server) => Effect.provide(effect, clientLayer(optionsFor(server, overrides))))

/** The card input of a scenario card, with the examples' PIN and product line. */
export const card = (cardNumber: string, pinNumber: string = TestData.pin) => ({
  cardNumber,
  pinNumber,
  productLineId: TestData.defaultProductLineId
})

/** Polls the GET until the quote completes (real time, 10 ms apart); a failing GET ends it with its error. */
export const pollUntilDone = (
  transactionId: string
): Effect.Effect<ExchangeClient.TransactionResult, ExchangeClient.ClientError, ExchangeClient.ExchangeClient> =>
  Effect.flatMap(ExchangeClient.ExchangeClient, (client) => {
    const loop: Effect.Effect<ExchangeClient.TransactionResult, ExchangeClient.ClientError> = client.getTransaction(
      transactionId
    ).pipe(
      Effect.flatMap((result) =>
        result.status.response.isCompleted ? Effect.succeed(result) : Effect.andThen(Effect.sleep("10 millis"), loop)
      )
    )
    return loop
  })

/** Polls the GET until it fails, and returns the error (an outcome the test expects). */
export const pollUntilFailure = (transactionId: string) => Effect.flip(pollUntilDone(transactionId))

/** The journal entries of one route, oldest first. */
export const entriesOf = (journal: Journal.Journal, route: Journal.Route) =>
  journal.entries.filter((entry) => entry.route === route)

/** The journal. */
export const journal = Effect.flatMap(Sandbox.SandboxServer, (server) => server.journal)

/** Measures an effect on the live clock. */
export const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = performance.now()
    const value = yield* effect
    return [value, Duration.millis(performance.now() - start)] as const
  })

/** 32 lowercase hex characters: a generated requestId or trace id. */
export const hex32 = /^[0-9a-f]{32}$/

/** The trace id an error carries. */
export const traceIdOf = (error: Errors.QuoteFailure): Option.Option<string> =>
  Option.fromNullishOr("traceId" in error ? error.traceId : undefined)

/** A local port where nothing listens: bound, then released. */
export const closedPort: Effect.Effect<number> = Effect.callback<number>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})
