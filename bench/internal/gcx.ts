/**
 * The gcx side of every row: the client, the poller, the bus and a journal,
 * composed over `FetchHttpClient` for a sandbox endpoint, with the default
 * test partner unless told otherwise.
 */
import type { ExchangeConfig } from "@gcx/http"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Sandbox, TestData } from "@gcx/sandbox"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import type * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import type { RawConfig } from "../baseline/RawClient.js"
import type { Endpoint } from "./SandboxProcess.js"

/** The card that completes at once (the POST answers completed): the card of the throughput rows. */
export const instantCard = {
  cardNumber: TestData.Cards.instant,
  pinNumber: TestData.pin,
  productLineId: TestData.defaultProductLineId
}

/** The client options for a sandbox endpoint and the default partner. */
export const clientOptions = (
  endpoint: Endpoint,
  overrides: Partial<ExchangeConfig.Options> = {}
): ExchangeConfig.Options => ({ ...Sandbox.clientOptions(endpoint), ...overrides })

/** The raw baseline's settings for the same endpoint and partner. */
export const rawOptions = (endpoint: Endpoint, pollIntervalMillis: number): RawConfig => ({
  baseUrl: endpoint.baseUrl,
  authUrl: endpoint.authUrl,
  stage: endpoint.stage,
  clientId: TestData.partner.clientId,
  clientSecret: TestData.partner.clientSecret,
  apiKey: TestData.partner.apiKey,
  pollIntervalMillis
})

/** What the poller layer is built from. */
export interface PollerLayerOptions {
  readonly client?: Partial<ExchangeConfig.Options> | undefined
  /** Default: the no-op journal. */
  readonly journal?: Layer.Layer<QuoteJournal.QuoteJournal> | undefined
  readonly bus?: QuoteEvents.Options | undefined
  readonly poller?: QuotePoller.Options | undefined
  /** Default: `FetchHttpClient.layer`. */
  readonly http?: Layer.Layer<HttpClient.HttpClient> | undefined
}

/** The exchange client alone (with its token provider and configuration). */
export const clientLayer = (endpoint: Endpoint, overrides: Partial<ExchangeConfig.Options> = {}) =>
  ExchangeClient.layerWith(clientOptions(endpoint, overrides)).pipe(
    Layer.provide(FetchHttpClient.layer),
    Layer.orDie
  )

/** The poller, its bus and its journal over a real client for `endpoint`. */
export const pollerLayer = (endpoint: Endpoint, options: PollerLayerOptions = {}) =>
  QuotePoller.layer(options.poller).pipe(
    Layer.provideMerge(
      Layer.mergeAll(QuoteEvents.layer(options.bus), options.journal ?? QuoteJournal.layerNoop)
    ),
    Layer.provideMerge(ExchangeClient.layerWith(clientOptions(endpoint, options.client))),
    Layer.provide(options.http ?? FetchHttpClient.layer),
    Layer.orDie
  )
