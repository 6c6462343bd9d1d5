/**
 * The exchange client: the heartbeat, the POST quote and the GET transaction
 * of the spec (section 4), as an Effect service.
 *
 * - Every request carries the bearer token, `x-api-key`, `requestId` (32
 *   lowercase hex characters unless the caller gives one) and
 *   `previousAttempts`. `authorization` and `x-api-key` are kept among the
 *   redacted header names, so Effect's request logging and tracing hide them.
 * - Answers decode with @gcx/core's schemas; non-2xx answers go through
 *   `Errors.fromResponse`; a body that does not decode is `UnexpectedResponse`.
 *   An optional hint that cannot be read (`expectedCompletionTime`,
 *   `percentComplete`, a timestamp: `TolerantReader`) is dropped and the
 *   answer used without it; each client logs a warning naming the field (never
 *   its value) the first time it drops it.
 * - A redirect is never followed (`UnexpectedResponse`, reason `Redirect`), and
 *   no more than `maxResponseBytes` of an answer is read (reason `TooLarge`).
 * - The service's text is not trusted whole: SVC-TRACE-ID is kept only when it
 *   looks like a trace id (the first one dropped is logged once, never its
 *   value), and the Location and the step tags are masked and cut to 1,024
 *   characters (`Redaction.serviceText`), as `Errors.fromResponse` does with
 *   the Error body.
 * - Retries follow `RetryPolicy`: a retried request keeps its requestId and
 *   counts `previousAttempts` up, so a retried POST creates no second
 *   transaction (service-notes.md). A POST whose outcome stays unknown fails
 *   with an error carrying `requestId` and `attempts`; the caller resumes it
 *   with `CallOptions.requestId` and `CallOptions.previousAttempts`.
 * - Each call runs in a span carrying requestId, transactionId, traceId,
 *   attempts and status; nothing secret or card-related.
 */
import type * as Card from "@gcx/core/Card"
import type * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import * as Quote from "@gcx/core/Quote"
import * as Redaction from "@gcx/core/Redaction"
import * as Routes from "@gcx/core/Routes"
import * as Transaction from "@gcx/core/Transaction"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as ExchangeConfig from "./ExchangeConfig.js"
import * as Exchange from "./internal/exchange.js"
import * as Input from "./internal/input.js"
import { refuseRedirects } from "./internal/redirects.js"
import * as ServiceText from "./internal/serviceText.js"
import { annotate, propagateTrace, successAttributes, traced } from "./internal/tracing.js"
import * as Transport from "./internal/transport.js"
import * as RetryBudget from "./RetryBudget.js"
import type * as RetryPolicy from "./RetryPolicy.js"
import * as TokenProvider from "./TokenProvider.js"

export {
  /**
   * Adds the trace context of the current span (the call's) to a request as
   * `traceparent` and `b3` headers, unless tracing or propagation is off.
   */
  propagateTrace
}

/** Options of one call. */
export interface CallOptions {
  /**
   * The requestId (idempotency key) to send; by default a fresh one of 32
   * lowercase hex characters. Must be 1 to 64 letters, digits, `-` and `_`.
   *
   * To resume a POST whose outcome is unknown (it failed after its attempts,
   * and may have been processed), give its requestId together with
   * `previousAttempts`: the error's `requestId` and `attempts`. The same
   * requestId with an unchanged `previousAttempts` is refused by the service
   * (400 `request.duplicate.requestId`, an `InvalidRequest`).
   */
  readonly requestId?: string | undefined
  /**
   * How many attempts of this same requestId were made before this call
   * (default 0). The first request of the call sends it as the
   * `previousAttempts` header, and every retry one more. Resume a POST with
   * `createQuote(card, { requestId: error.requestId, previousAttempts: error.attempts })`:
   * if an earlier attempt was processed, the service answers the original
   * transaction and creates none. The `attempts` of the result or error then
   * include these earlier attempts, so the recipe can be repeated. Must be a
   * non-negative integer.
   */
  readonly previousAttempts?: number | undefined
  /** Told before every retry (the poller turns these into `Retrying` events). */
  readonly onRetry?: ((info: RetryPolicy.RetryInfo) => Effect.Effect<void>) | undefined
}

/** What every successful call reports besides its value. */
export interface CallInfo {
  /** The SVC-TRACE-ID header of the answer, if sent and it looks like a trace id (`Redaction.traceId`). */
  readonly traceId: Option.Option<string>
  readonly requestId: string
  /**
   * Attempts of this requestId: the requests this call sent (the successful
   * one included), plus the `previousAttempts` the caller gave.
   */
  readonly attempts: number
  /** Total time spent waiting between attempts. */
  readonly retryDelay: Duration.Duration
}

/** The heartbeat answered with a success. */
export interface HeartbeatResult extends CallInfo {
  readonly httpStatus: number
  /** How long the successful attempt took. */
  readonly latency: Duration.Duration
}

/** The POST quote created (or, on a retry, found) the transaction. */
export interface CreatedQuote extends CallInfo {
  readonly quote: Quote.QuoteResponse
  readonly transactionId: string
  /** The Location header: the address of the transaction's GET, as `Redaction.location` keeps it. */
  readonly location: Option.Option<string>
}

/** The GET returned the transaction's status. */
export interface TransactionResult extends CallInfo {
  readonly status: Transaction.TransactionStatus
}

/** What a call to the service can fail with. */
export type ClientError = Errors.ServiceError | Errors.TokenError

/** The exchange client. */
export interface Service {
  /** GET the heartbeat: the service can be reached with valid credentials. */
  readonly heartbeat: Effect.Effect<HeartbeatResult, ClientError>
  /**
   * POST a quote (step 1 of GetQuote). The card is validated before any I/O
   * (`InvalidCardInput`); a malformed requestId is an `InvalidRequest`.
   */
  readonly createQuote: (
    request: Quote.QuoteRequest | Card.CardInput,
    options?: CallOptions
  ) => Effect.Effect<CreatedQuote, ClientError | Errors.InvalidCardInput>
  /**
   * GET a transaction's status (step 2 of GetQuote). Card outcomes and
   * MerchantUnavailable arrive as their errors and are never retried. A
   * malformed transactionId or requestId is an `InvalidRequest`, before any I/O.
   */
  readonly getTransaction: (
    transactionId: string,
    options?: CallOptions
  ) => Effect.Effect<TransactionResult, ClientError>
}

/** The exchange client. */
export class ExchangeClient extends Context.Service<ExchangeClient, Service>()("@gcx/http/ExchangeClient") {}

// Compiled once: decoding an answer is then a plain function call.
const decodeQuote = Transport.jsonDecoder(Quote.QuoteResponse, Quote.responseHints)
const decodeStatus = Transport.jsonDecoder(Transaction.TransactionStatus, Transaction.statusHints)
const decodeTransaction: Transport.JsonDecoder<Transaction.TransactionStatus> = (answer, context) =>
  Result.map(decodeStatus(answer, context), (read) => {
    const value = ServiceText.keepStepTags(read.value)
    return value === read.value ? read : { ...read, value }
  })

/** The fields of `CallInfo` from a call's result. */
const callInfo = (result: CallInfo): CallInfo => ({
  traceId: result.traceId,
  requestId: result.requestId,
  attempts: result.attempts,
  retryDelay: result.retryDelay
})

/** Builds the client. The retry budget is created here: one per client. */
export const make = (): Effect.Effect<
  Service,
  never,
  ExchangeConfig.ExchangeConfig | TokenProvider.TokenProvider | HttpClient.HttpClient
> =>
  Effect.gen(function*() {
    const config = yield* ExchangeConfig.ExchangeConfig
    // One span per call (`ExchangeClient.*`, with the attempts on it) instead of the platform's span per
    // attempt, which costs more CPU than the rest of a request. The platform propagates the trace context
    // only from its own span, so `propagateTrace` sends the call's.
    const client = (yield* HttpClient.HttpClient).pipe(
      HttpClient.transformResponse(Effect.provideService(HttpClient.TracerDisabledWhen, () => true)),
      HttpClient.mapRequestEffect(propagateTrace),
      refuseRedirects
    )
    const { call } = Exchange.make({
      config,
      tokens: yield* TokenProvider.TokenProvider,
      client,
      budget: yield* RetryBudget.make(config.retry.budget)
    })
    const stage = Option.getOrUndefined(config.stage)

    // What every request carries, set once: each attempt then copies the headers once to add its own.
    const request = (method: "GET" | "POST", path: string) =>
      HttpClientRequest.make(method)(`${config.baseUrl}${path}`, {
        acceptJson: true,
        headers: { [Routes.Headers.apiKey]: Redacted.value(config.apiKey) }
      })
    const heartbeatRequest = request("GET", Routes.heartbeatPath)
    const quoteRequest = request("POST", Routes.quotePath(stage))

    const heartbeat = Effect.gen(function*() {
      const requestId = Ids.makeRequestId()
      yield* annotate({ requestId })
      const result = yield* call("heartbeat", heartbeatRequest, { requestId }, Exchange.readNothing, {})
      yield* annotate(successAttributes(result))
      return { ...callInfo(result), httpStatus: result.httpStatus, latency: result.latency } satisfies HeartbeatResult
    }).pipe(traced("ExchangeClient.heartbeat"))

    const createQuote = (input: Quote.QuoteRequest | Card.CardInput, options: CallOptions = {}) =>
      Effect.gen(function*() {
        const card = yield* Effect.fromResult(Input.cardOf(input))
        const requestId = yield* Effect.fromResult(Input.resolveRequestId(options.requestId))
        const previousAttempts = yield* Effect.fromResult(Input.resolvePreviousAttempts(options.previousAttempts))
        yield* annotate({ requestId, previousAttempts })
        const result = yield* call(
          "createQuote",
          HttpClientRequest.setBody(quoteRequest, Input.quoteBody(card)),
          { requestId },
          // A 2xx that does not decode fails with UnexpectedResponse, which
          // RetryPolicy retries on the POST: the replay brings the original answer.
          decodeQuote,
          { onRetry: options.onRetry, previousAttempts }
        )
        yield* annotate({ ...successAttributes(result), transactionId: result.value.transactionId })
        return {
          quote: result.value,
          transactionId: result.value.transactionId,
          location: Option.map(
            Option.fromUndefinedOr(Transport.header(result, Routes.Headers.location)),
            (location) => Redaction.location(location, result.value.transactionId)
          ),
          ...callInfo(result)
        } satisfies CreatedQuote
      }).pipe(traced("ExchangeClient.createQuote"))

    const getTransaction = (transactionId: string, options: CallOptions = {}) =>
      Effect.gen(function*() {
        const id = yield* Effect.fromResult(Input.checkTransactionId(transactionId))
        const requestId = yield* Effect.fromResult(Input.resolveRequestId(options.requestId))
        const previousAttempts = yield* Effect.fromResult(Input.resolvePreviousAttempts(options.previousAttempts))
        yield* annotate({ requestId, transactionId: id, previousAttempts })
        const result = yield* call(
          "getTransaction",
          // The heartbeat's GET (same headers, no body) at the transaction's URL.
          HttpClientRequest.setUrl(heartbeatRequest, `${config.baseUrl}${Routes.transactionPath(id, stage)}`),
          { requestId, transactionId: id },
          decodeTransaction,
          { onRetry: options.onRetry, previousAttempts }
        )
        yield* annotate(successAttributes(result))
        return { status: result.value, ...callInfo(result) } satisfies TransactionResult
      }).pipe(traced("ExchangeClient.getTransaction"))

    return ExchangeClient.of({ heartbeat, createQuote, getTransaction })
  })

/** The exchange client; needs `ExchangeConfig`, `TokenProvider` and an `HttpClient` (e.g. `FetchHttpClient.layer`). */
export const layer: Layer.Layer<
  ExchangeClient,
  never,
  ExchangeConfig.ExchangeConfig | TokenProvider.TokenProvider | HttpClient.HttpClient
> = Layer.effect(ExchangeClient, make())

const withProviders = <E>(
  configLayer: Layer.Layer<ExchangeConfig.ExchangeConfig, E>
): Layer.Layer<
  ExchangeClient | TokenProvider.TokenProvider | ExchangeConfig.ExchangeConfig,
  E,
  HttpClient.HttpClient
> => {
  // Layers of their own, not `TokenProvider.layer` and `layer`: Effect 4 memoizes a layer by its identity
  // across `Effect.provide`s, so two clients with different configurations would share the first one built.
  const tokens = Layer.provideMerge(Layer.effect(TokenProvider.TokenProvider, TokenProvider.make), configLayer)
  return Layer.provideMerge(Layer.effect(ExchangeClient, make()), tokens)
}

/** The client with its token provider and the configuration given by `options`; the `HttpClient` is left to the caller. */
export const layerWith = (
  options: ExchangeConfig.Options
): Layer.Layer<
  ExchangeClient | TokenProvider.TokenProvider | ExchangeConfig.ExchangeConfig,
  Config.ConfigError,
  HttpClient.HttpClient
> => withProviders(ExchangeConfig.layer(options))

/** The client with its token provider and the configuration read from the `GCX_*` variables. */
export const layerConfig = (
  tuning?: ExchangeConfig.Tuning
): Layer.Layer<
  ExchangeClient | TokenProvider.TokenProvider | ExchangeConfig.ExchangeConfig,
  Config.ConfigError,
  HttpClient.HttpClient
> => withProviders(ExchangeConfig.layerConfig(tuning))
