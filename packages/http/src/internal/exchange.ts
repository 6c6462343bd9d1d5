/**
 * One exchange with the service: a token, the request with the attempt's
 * headers, the answer read and decoded, and the retries around it
 * (`RetryPolicy`). A non-2xx answer goes through core's error mapping, and a
 * 401 invalidates the token it was sent with. This is the hot path of every
 * call: `Effect.fnUntraced`, no span of its own (the call has one).
 */
import * as Errors from "@gcx/core/Errors"
import * as Routes from "@gcx/core/Routes"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Headers from "effect/http/Headers"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import type { ClientError } from "../ExchangeClient.js"
import type * as ExchangeConfig from "../ExchangeConfig.js"
import * as Metrics from "../Metrics.js"
import type * as RetryBudget from "../RetryBudget.js"
import * as RetryPolicy from "../RetryPolicy.js"
import type * as TokenProvider from "../TokenProvider.js"
import * as ServiceText from "./serviceText.js"
import * as Transport from "./transport.js"

/** What is known of a call's request, to put on its errors. */
export interface CallContext {
  readonly requestId: string
  readonly transactionId?: string | undefined
}

/** What one attempt brings back besides the decoded value. */
export interface Answered<A> {
  readonly value: A
  readonly httpStatus: number
  readonly headers: Headers.Headers
  readonly traceId: Option.Option<string>
  readonly latency: Duration.Duration
}

/** A call's result: the last attempt's answer, with the requestId, the attempts and the retry delay. */
export interface Called<A> extends Answered<A> {
  readonly requestId: string
  readonly attempts: number
  readonly retryDelay: Duration.Duration
}

/** Options of one call. */
export interface CallOptions {
  readonly onRetry?: ((info: RetryPolicy.RetryInfo) => Effect.Effect<void>) | undefined
  readonly previousAttempts?: number | undefined
}

/** Calls to the service, for one client. */
export interface Exchange {
  readonly call: <A>(
    operation: RetryPolicy.Operation,
    request: HttpClientRequest.HttpClientRequest,
    context: CallContext,
    read: Transport.JsonDecoder<A>,
    options: CallOptions
  ) => Effect.Effect<Called<A>, ClientError>
}

/** The exchanges of one client: `client` sends, `tokens` authorizes, `budget` is the client's retry budget. */
export const make = (options: {
  readonly config: ExchangeConfig.Service
  readonly tokens: TokenProvider.Service
  readonly client: HttpClient.HttpClient
  readonly budget: RetryBudget.RetryBudget
}): Exchange => {
  const { budget, client, config, tokens } = options
  const limits: Transport.Limits = {
    timeout: config.requestTimeout,
    maxResponseBytes: config.maxResponseBytes,
    traceIds: ServiceText.traceIds("the service")
  }

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

  /** A 2xx answer read with `read`, or a non-2xx one mapped to its error (invalidating `token` on a 401). */
  const answered = <A>(
    answer: Transport.Answer,
    token: Redacted.Redacted<string>,
    context: CallContext,
    read: Transport.JsonDecoder<A>,
    startedAt: number,
    finishedAt: number
  ): Effect.Effect<Answered<A>, ClientError> => {
    if (!Transport.isSuccess(answer.status)) {
      const error = Errors.fromResponse({ ...answer, ...context, now: finishedAt })
      return error._tag === "Unauthorized"
        ? Effect.andThen(tokens.invalidateToken(token), Effect.fail(error))
        : Effect.fail(error)
    }
    const traceId = answer.traceId
    const decoded = read(answer, { ...context, httpStatus: answer.status, traceId })
    if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
    const value = Effect.succeed({
      value: decoded.success.value,
      httpStatus: answer.status,
      headers: answer.headers,
      traceId: Option.fromNullishOr(traceId),
      latency: Duration.millis(finishedAt - startedAt)
    })
    return decoded.success.dropped.length === 0 ? value : Effect.andThen(logDropped(decoded.success.dropped), value)
  }

  /** One attempt: a token, the request with the attempt's headers, the answer. */
  const attempt = Effect.fnUntraced(function*<A>(
    operation: RetryPolicy.Operation,
    request: HttpClientRequest.HttpClientRequest,
    context: CallContext,
    read: Transport.JsonDecoder<A>,
    previousAttempts: number
  ): Effect.fn.Return<Answered<A>, ClientError> {
    const token = yield* tokens.get
    const clock = yield* Clock.Clock
    const startedAt = clock.currentTimeMillisUnsafe()
    const authorized = HttpClientRequest.setHeaders(request, {
      [Routes.Headers.authorization]: `Bearer ${Redacted.value(token)}`,
      [Routes.Headers.requestId]: context.requestId,
      [Routes.Headers.previousAttempts]: String(previousAttempts)
    })
    const answer = yield* Transport.send(client, authorized, limits, context).pipe(Metrics.timeRequest(operation))
    return yield* answered(answer, token, context, read, startedAt, clock.currentTimeMillisUnsafe())
  })

  /** One call: attempts with retries (`RetryPolicy`); the result carries what every call reports. */
  const call = <A>(
    operation: RetryPolicy.Operation,
    request: HttpClientRequest.HttpClientRequest,
    context: CallContext,
    read: Transport.JsonDecoder<A>,
    options: CallOptions
  ): Effect.Effect<Called<A>, ClientError> =>
    RetryPolicy.execute({
      operation,
      settings: config.retry,
      budget,
      onRetry: options.onRetry,
      previousAttempts: options.previousAttempts,
      requestId: context.requestId,
      attempt: (previousAttempts) => attempt(operation, request, context, read, previousAttempts)
    }).pipe(
      Effect.map(({ attempts, retryDelay, value }) => ({
        ...value,
        requestId: context.requestId,
        attempts,
        retryDelay
      }))
    )

  return { call }
}

/** A decoder for answers whose body is not relied on (the heartbeat's). */
export const readNothing: Transport.JsonDecoder<void> = () => Result.succeed({ value: undefined, dropped: [] })
