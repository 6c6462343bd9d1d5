/**
 * `gcx serve` embedded, in this process, composed as `gcx serve` composes it
 * (`packages/cli/src/run/Serve.ts`): the gateway's server (`Gateway.layer`)
 * over `GatewayQuotes`, the API keys, the rate limit and the event log's
 * reader, on the embedded deployment (`Embedded.layerQuotes`: the single
 * runner on SQLite in a file, the event log's writer), with the exchange
 * client of a sandbox and the card cipher of a data key. The keys' webhooks
 * (`WebhookDelivery.layerNode`, always on in `gcx serve`) only when asked:
 * row 9 measures without them. Building it again on the same file, port and
 * data key is a restart of the gateway. Used by row 9 and by the gateway's
 * chaos run.
 */
import * as ApiKeys from "@gcx/gateway/ApiKeys"
import * as Gateway from "@gcx/gateway/Gateway"
import * as GatewayQuotes from "@gcx/gateway/GatewayQuotes"
import * as RateLimit from "@gcx/gateway/RateLimit"
import * as WebhookDelivery from "@gcx/gateway/WebhookDelivery"
import type { ExchangeConfig } from "@gcx/http"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as Embedded from "@gcx/workflow/Embedded"
import * as EventLog from "@gcx/workflow/EventLog"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as LogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import * as References from "effect/References"
import { clientLayer } from "./gcx.js"
import type { Endpoint } from "./SandboxProcess.js"

/** Where and how the deployment runs. */
export interface Options {
  /** The sandbox the engine quotes against. */
  readonly endpoint: Endpoint
  /** The embedded database file. */
  readonly filename: string
  /** The gateway's port on 127.0.0.1 (`PgTest.freePort`: the same port after a restart). */
  readonly port: number
  /** The data key (base64): seals the cards, derives the quote ids; keep it across restarts. */
  readonly dataKey: string
  /** The exchange client's settings over the sandbox's defaults (partner, timeouts, retries). */
  readonly client?: Partial<ExchangeConfig.Options> | undefined
  /** The keys' webhooks delivered as `gcx serve` does (`WebhookDelivery.layerNode`); none when absent. */
  readonly webhooks?: WebhookDelivery.Options | undefined
  /** The least level logged. Default `Warn`: no line per request in a run's output. */
  readonly logLevel?: LogLevel.LogLevel | undefined
}

/** The gateway serving on `options.port`, its deployment and its services, until the layer's scope closes. */
export const layer = (options: Options) =>
  // one caller key holds row 9's 1,000 open streams: room above them (the default is 1,000 a key)
  Gateway.layer({ port: options.port, host: "127.0.0.1", maxHeldPerKey: 100_000 }).pipe(
    Layer.provideMerge(GatewayQuotes.layer(options.dataKey)),
    Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, RateLimit.layer, EventLog.layer())),
    Layer.provideMerge(
      Embedded.layerQuotes(
        { filename: options.filename },
        options.webhooks === undefined ? undefined : WebhookDelivery.layerNode(options.webhooks)
      )
    ),
    Layer.provideMerge(Layer.merge(clientLayer(options.endpoint, options.client), CardCipher.layer(options.dataKey))),
    Layer.provide(Layer.succeed(References.MinimumLogLevel, options.logLevel ?? "Warn")),
    Layer.orDie
  )

/** The gateway's base URL on `port`. */
export const baseUrl = (port: number): string => `http://127.0.0.1:${port}`

/** What the deployment provides. */
export type Services = Layer.Success<ReturnType<typeof layer>>

/** What a created key gives its caller: the key, its id, and each webhook endpoint's secret (in clear, once). */
export interface Caller {
  readonly key: string
  readonly keyId: string
  readonly webhookSecrets: ReadonlyArray<string>
}

/** Creates an API key with `webhooks`, rate-limited far above what a run sends (the bench does not measure 429s). */
export const createCaller = (name: string, webhooks: ReadonlyArray<string> = []) =>
  Effect.flatMap(ApiKeys.ApiKeys, (keys) => keys.create({ name, ratePerSecond: 1_000_000, burst: 1_000_000, webhooks }))
    .pipe(
      Effect.map((created): Caller => ({
        key: Redacted.value(created.key),
        keyId: created.apiKey.id,
        webhookSecrets: created.apiKey.webhooks.map((endpoint) => Redacted.value(endpoint.secret))
      })),
      Effect.orDie
    )
