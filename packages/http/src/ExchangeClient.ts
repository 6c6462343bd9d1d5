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
import type * as Headers from "@effect/platform/Headers"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Card from "@gcx/core/Card"
import * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import * as Quote from "@gcx/core/Quote"
import * as Redaction from "@gcx/core/Redaction"
import * as Routes from "@gcx/core/Routes"
import * as Transaction from "@gcx/core/Transaction"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as ExchangeConfig from "./ExchangeConfig.js"
import { refuseRedirects } from "./internal/redirects.js"
import * as ServiceText from "./internal/serviceText.js"
import * as Transport from "./internal/transport.js"
import * as Metrics from "./Metrics.js"
import * as RetryBudget from "./RetryBudget.js"
import * as RetryPolicy from "./RetryPolicy.js"
import * as TokenProvider from "./TokenProvider.js"

/** Options of one call. */
export interface CallOptions {
  /**
   * The requestId (idempotency key) to send; by default a fresh one of 32
   * lowercase hex characters. Must be 1 to 64 visible ASCII characters.
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
  /** The Location header: the address of the transaction's GET, as `Redaction.serviceText` keeps it. */
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
export class ExchangeClient extends Context.Tag("@gcx/http/ExchangeClient")<ExchangeClient, Service>() {}

/** A caller-given value refused before any I/O. */
const invalidInput = (message: string) => new Errors.InvalidRequest({ message })

const isTransactionId = Schema.is(Ids.TransactionId)
const isRequestId = Schema.is(Ids.RequestId)

/** A caller-given transactionId, checked before it goes into a URL. */
const checkTransactionId = (transactionId: string): Either.Either<string, Errors.InvalidRequest> =>
  isTransactionId(transactionId)
    ? Either.right(transactionId)
    : Either.left(invalidInput("transactionId must be 1 to 128 letters, digits, '-' or '_'"))

/** The caller's previousAttempts, checked; 0 by default. */
const resolvePreviousAttempts = (previousAttempts: number | undefined): Either.Either<number, Errors.InvalidRequest> =>
  previousAttempts === undefined
    ? Either.right(0)
    : Number.isSafeInteger(previousAttempts) && previousAttempts >= 0
    ? Either.right(previousAttempts)
    : Either.left(invalidInput("previousAttempts must be a non-negative integer"))

/** The caller's requestId, checked, or a fresh one. */
const resolveRequestId = (requestId: string | undefined): Either.Either<string, Errors.InvalidRequest> =>
  requestId === undefined
    ? Either.right(Ids.makeRequestId())
    : isRequestId(requestId)
    ? Either.right(requestId)
    : Either.left(invalidInput("requestId must be 1 to 64 visible ASCII characters"))

/**
 * The wire body of a quote request. Sent with `application/json;
 * charset=utf-8`, which Effect's request inspection prints as `Uint8Array(n)`,
 * never as text, so the card cannot leak through a logged request.
 */
const quoteBody = (card: Card.Card): HttpBody.HttpBody => {
  const wire: typeof Quote.QuoteRequest.Encoded = {
    card: {
      cardNumber: Redacted.value(card.cardNumber),
      pinNumber: Redacted.value(card.pinNumber),
      productLineId: card.productLineId
    }
  }
  return HttpBody.text(JSON.stringify(wire), "application/json; charset=utf-8")
}

// Compiled once: decoding an answer is then a plain function call.
const decodeQuote = Transport.jsonDecoder(Quote.QuoteResponse, Quote.responseHints)
const decodeStatus = Transport.jsonDecoder(Transaction.TransactionStatus, Transaction.statusHints)
const decodeTransaction: Transport.JsonDecoder<Transaction.TransactionStatus> = (answer, context) =>
  Either.map(decodeStatus(answer, context), (read) => {
    const value = ServiceText.keepStepTags(read.value)
    return value === read.value ? read : { ...read, value }
  })
const readNothing: Transport.JsonDecoder<void> = () => Either.right({ value: undefined, dropped: [] })

const failureAttributes = (error: ClientError | Errors.InvalidCardInput): Record<string, unknown> => {
  const attributes: Record<string, unknown> = { error: error._tag }
  if ("httpStatus" in error && error.httpStatus !== undefined) attributes.status = error.httpStatus
  if ("traceId" in error && error.traceId !== undefined) attributes.traceId = error.traceId
  if ("attempts" in error && error.attempts !== undefined) attributes.attempts = error.attempts
  if ("errorCode" in error && error.errorCode !== undefined) attributes.errorCode = error.errorCode
  return attributes
}

const successAttributes = (info: CallInfo & { readonly httpStatus: number }): Record<string, unknown> => ({
  status: info.httpStatus,
  attempts: info.attempts,
  retryDelayMillis: Duration.toMillis(info.retryDelay),
  ...Option.match(info.traceId, { onNone: () => ({}), onSome: (traceId) => ({ traceId }) })
})

/**
 * Sets attributes on the current span (the call's). One fiber read, where
 * `Effect.annotateCurrentSpan` runs several Effects per call.
 */
const annotate = (attributes: Record<string, unknown>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    const span = fiber.currentSpan
    if (span !== undefined && span._tag === "Span") {
      for (const key in attributes) span.attribute(key, attributes[key])
    }
    return Effect.void
  })

/** Runs a call in its span, recording the failure's attributes on the span when it fails. */
const traced =
  (name: string) =>
  <A, E extends ClientError | Errors.InvalidCardInput, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    effect.pipe(
      Effect.tapError((error) => annotate(failureAttributes(error))),
      // No stack trace: capturing one costs more CPU per call than the rest of the span.
      Effect.withSpan(name, { captureStackTrace: false })
    )

/**
 * Adds the trace context of the current span (the call's) to a request as
 * `traceparent` and `b3` headers, as the platform's tracer would, unless
 * tracing or `HttpClient.currentTracerPropagation` is off. It runs inside the
 * `HttpClient`, so that `HttpClient.withTracerPropagation(false)` on the
 * client given to the layer is honoured too.
 */
export const propagateTrace = (
  request: HttpClientRequest.HttpClientRequest
): Effect.Effect<HttpClientRequest.HttpClientRequest> =>
  Effect.withFiberRuntime((fiber) => {
    const span = fiber.currentSpan
    return Effect.succeed(
      span !== undefined && span._tag === "Span" && fiber.getFiberRef(HttpClient.currentTracerPropagation) &&
        fiber.getFiberRef(FiberRef.currentTracerEnabled)
        ? HttpClientRequest.setHeaders(request, HttpTraceContext.toHeaders(span))
        : request
    )
  })

/** What one attempt brings back besides the decoded value. */
interface Answered<A> {
  readonly value: A
  readonly httpStatus: number
  readonly headers: Headers.Headers
  readonly traceId: Option.Option<string>
  readonly latency: Duration.Duration
}

/** Builds the client. The retry budget is created here: one per client. */
export const make = (): Effect.Effect<
  Service,
  never,
  ExchangeConfig.ExchangeConfig | TokenProvider.TokenProvider | HttpClient.HttpClient
> =>
  Effect.gen(function*() {
    const config = yield* ExchangeConfig.ExchangeConfig
    const tokens = yield* TokenProvider.TokenProvider
    // One span per call (`ExchangeClient.*`, with the attempts on it) instead of the platform's span per
    // attempt, which costs more CPU than the rest of a request. The platform propagates the trace context
    // only from its own span, so `propagateTrace` sends the call's.
    const client = (yield* HttpClient.HttpClient).pipe(
      HttpClient.withTracerDisabledWhen(() => true),
      HttpClient.mapRequestEffect(propagateTrace),
      refuseRedirects
    )
    const limits: Transport.Limits = {
      timeout: config.requestTimeout,
      maxResponseBytes: config.maxResponseBytes,
      traceIds: ServiceText.traceIds("the service")
    }
    const budget = yield* RetryBudget.make(config.retry.budget)
    const stage = Option.getOrUndefined(config.stage)

    // What every request carries, set once: each attempt then copies the headers once to add its own.
    const request = (method: "GET" | "POST", path: string) =>
      HttpClientRequest.make(method)(`${config.baseUrl}${path}`, {
        acceptJson: true,
        headers: { [Routes.Headers.apiKey]: Redacted.value(config.apiKey) }
      })
    const heartbeatRequest = request("GET", Routes.heartbeatPath)

    // The hints this client has already said it dropped: each is logged once, however often it comes.
    const droppedHints = new Set<string>()
    const logDropped = (paths: ReadonlyArray<string>) =>
      Effect.forEach(paths, (field) => {
        if (droppedHints.has(field)) return Effect.void
        droppedHints.add(field)
        return Effect.logWarning("the service sent an optional field that cannot be read; it is ignored").pipe(
          Effect.annotateLogs({ field })
        )
      }, { discard: true })
    const quoteRequest = request("POST", Routes.quotePath(stage))

    /**
     * One attempt: a token, the request with the attempt's headers, the answer;
     * a non-2xx answer goes through core's error mapping (invalidating the
     * token on a 401) and a 2xx answer is read with `read`.
     */
    const attempt = <A>(
      operation: RetryPolicy.Operation,
      request: HttpClientRequest.HttpClientRequest,
      context: { readonly requestId: string; readonly transactionId?: string | undefined },
      read: Transport.JsonDecoder<A>,
      previousAttempts: number
    ): Effect.Effect<Answered<A>, ClientError> =>
      Effect.flatMap(tokens.get, (token) =>
        Effect.clockWith((clock) => {
          const startedAt = clock.unsafeCurrentTimeMillis()
          const authorized = HttpClientRequest.setHeaders(request, {
            [Routes.Headers.authorization]: `Bearer ${Redacted.value(token)}`,
            [Routes.Headers.requestId]: context.requestId,
            [Routes.Headers.previousAttempts]: String(previousAttempts)
          })
          return Effect.flatMap(
            Transport.send(client, authorized, limits, context).pipe(Metrics.timeRequest(operation)),
            (answer): Effect.Effect<Answered<A>, ClientError> => {
              const finishedAt = clock.unsafeCurrentTimeMillis()
              if (!Transport.isSuccess(answer.status)) {
                const error = Errors.fromResponse({ ...answer, ...context, now: finishedAt })
                return error._tag === "Unauthorized"
                  ? Effect.zipRight(tokens.invalidateToken(token), Effect.fail(error))
                  : Effect.fail(error)
              }
              const traceId = answer.traceId
              const decoded = read(answer, { ...context, httpStatus: answer.status, traceId })
              if (Either.isLeft(decoded)) return Effect.fail(decoded.left)
              const answered = Effect.succeed({
                value: decoded.right.value,
                httpStatus: answer.status,
                headers: answer.headers,
                traceId: Option.fromNullable(traceId),
                latency: Duration.millis(finishedAt - startedAt)
              })
              return decoded.right.dropped.length === 0
                ? answered
                : Effect.zipRight(logDropped(decoded.right.dropped), answered)
            }
          )
        }))

    /** One call: attempts with retries (`RetryPolicy`); the result carries what every call reports. */
    const call = <A>(
      operation: RetryPolicy.Operation,
      request: HttpClientRequest.HttpClientRequest,
      context: { readonly requestId: string; readonly transactionId?: string | undefined },
      read: Transport.JsonDecoder<A>,
      options: { readonly onRetry?: CallOptions["onRetry"]; readonly previousAttempts?: number }
    ) =>
      RetryPolicy.execute({
        operation,
        settings: config.retry,
        budget,
        onRetry: options.onRetry,
        previousAttempts: options.previousAttempts,
        attempt: (previousAttempts) => attempt(operation, request, context, read, previousAttempts)
      }).pipe(
        Effect.map(({ attempts, retryDelay, value }) => ({
          ...value,
          requestId: context.requestId,
          attempts,
          retryDelay
        }))
      )

    /** The fields of `CallInfo` from a call's result. */
    const callInfo = (result: CallInfo): CallInfo => ({
      traceId: result.traceId,
      requestId: result.requestId,
      attempts: result.attempts,
      retryDelay: result.retryDelay
    })

    const heartbeat = Effect.gen(function*() {
      const requestId = Ids.makeRequestId()
      yield* annotate({ requestId })
      const result = yield* call("heartbeat", heartbeatRequest, { requestId }, readNothing, {})
      yield* annotate(successAttributes(result))
      return { ...callInfo(result), httpStatus: result.httpStatus, latency: result.latency } satisfies HeartbeatResult
    }).pipe(traced("ExchangeClient.heartbeat"))

    const createQuote = (input: Quote.QuoteRequest | Card.CardInput, options: CallOptions = {}) =>
      Effect.gen(function*() {
        const card = yield* Card.validateEither(
          typeof input === "object" && input !== null && "card" in input ? input.card : input
        )
        const requestId = yield* resolveRequestId(options.requestId)
        const previousAttempts = yield* resolvePreviousAttempts(options.previousAttempts)
        yield* annotate({ requestId, previousAttempts })
        const result = yield* call(
          "createQuote",
          HttpClientRequest.setBody(quoteRequest, quoteBody(card)),
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
            Option.fromNullable(Transport.header(result, Routes.Headers.location)),
            (location) => Redaction.serviceText(location)
          ),
          ...callInfo(result)
        } satisfies CreatedQuote
      }).pipe(traced("ExchangeClient.createQuote"))

    const getTransaction = (transactionId: string, options: CallOptions = {}) =>
      Effect.gen(function*() {
        const id = yield* checkTransactionId(transactionId)
        const requestId = yield* resolveRequestId(options.requestId)
        const previousAttempts = yield* resolvePreviousAttempts(options.previousAttempts)
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
  const tokens = Layer.provideMerge(TokenProvider.layer, configLayer)
  return Layer.provideMerge(layer, tokens)
}

/** The client with its token provider and the configuration given by `options`; the `HttpClient` is left to the caller. */
export const layerWith = (
  options: ExchangeConfig.Options
): Layer.Layer<
  ExchangeClient | TokenProvider.TokenProvider | ExchangeConfig.ExchangeConfig,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> => withProviders(ExchangeConfig.layer(options))

/** The client with its token provider and the configuration read from the `GCX_*` variables. */
export const layerConfig = (
  tuning?: ExchangeConfig.Tuning
): Layer.Layer<
  ExchangeClient | TokenProvider.TokenProvider | ExchangeConfig.ExchangeConfig,
  ConfigError.ConfigError,
  HttpClient.HttpClient
> => withProviders(ExchangeConfig.layerConfig(tuning))
