/**
 * The poller over a real client and a real sandbox on a free port.
 */
import { ExchangeClient } from "@gcx/http"
import type { ExchangeConfig } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { QuoteEvents, QuoteJournal, QuotePoller } from "../src/index.js"

/** A quiet sandbox on a free port. */
export const sandbox = (options: Sandbox.SandboxOptions = {}) => Sandbox.layer({ logLevel: "None", ...options })

/** Client options for a running sandbox and its default partner. */
export const clientOptions = (
  server: Sandbox.Service,
  overrides: Partial<ExchangeConfig.Options> = {}
): ExchangeConfig.Options => ({
  ...Sandbox.clientOptions(server),
  retry: { baseDelay: "10 millis", maxDelay: "200 millis", budget: { capacity: 1000, refillPerSecond: 100 } },
  ...overrides
})

/** The poller, its bus and its journal, over a real client for `server`. */
export const pollerLayer = (
  server: Sandbox.Service,
  options: {
    readonly client?: Partial<ExchangeConfig.Options>
    readonly journal?: Layer.Layer<QuoteJournal.QuoteJournal, QuoteJournal.JournalError>
    readonly poller?: QuotePoller.Options
    readonly bus?: QuoteEvents.Options
  } = {}
) =>
  QuotePoller.layer(options.poller).pipe(
    Layer.provideMerge(Layer.mergeAll(QuoteEvents.layer(options.bus), options.journal ?? QuoteJournal.layerMemory)),
    Layer.provideMerge(ExchangeClient.layerWith(clientOptions(server, options.client))),
    Layer.provide(FetchHttpClient.layer),
    Layer.orDie
  )

/** Runs `effect` with a poller for the sandbox in context. */
export const withPoller =
  (options: Parameters<typeof pollerLayer>[1] = {}) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.flatMap(Sandbox.SandboxServer, (server) => Effect.provide(effect, pollerLayer(server, options)))

/** Card input for a scenario card. */
export const card = (cardNumber: string, pinNumber: string = TestData.pin) => ({
  cardNumber,
  pinNumber,
  productLineId: TestData.defaultProductLineId
})
