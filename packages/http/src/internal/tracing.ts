/**
 * The spans of the exchange client: one per call (`ExchangeClient.*`), with
 * its requestId, attempts, status and trace id, never anything secret or
 * card-related; and the trace context of that span sent with each attempt,
 * since the platform's per-attempt span is turned off.
 */
import type * as Errors from "@gcx/core/Errors"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpTraceContext from "effect/http/HttpTraceContext"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"

/** What a successful call's span records. */
export interface SuccessInfo {
  readonly httpStatus: number
  readonly attempts: number
  readonly retryDelay: Duration.Duration
  readonly traceId: Option.Option<string>
}

/** The attributes of a failed call: the error's tag, status, trace id, attempts and ErrorCode. */
export const failureAttributes = (
  error: Errors.ServiceError | Errors.TokenError | Errors.InvalidCardInput
): Record<string, unknown> => {
  const attributes: Record<string, unknown> = { error: error._tag }
  if ("httpStatus" in error && error.httpStatus !== undefined) attributes.status = error.httpStatus
  if ("traceId" in error && error.traceId !== undefined) attributes.traceId = error.traceId
  if ("attempts" in error && error.attempts !== undefined) attributes.attempts = error.attempts
  if ("errorCode" in error && error.errorCode !== undefined) attributes.errorCode = error.errorCode
  return attributes
}

/** The attributes of a successful call. */
export const successAttributes = (info: SuccessInfo): Record<string, unknown> => ({
  status: info.httpStatus,
  attempts: info.attempts,
  retryDelayMillis: Duration.toMillis(info.retryDelay),
  ...Option.match(info.traceId, { onNone: () => ({}), onSome: (traceId) => ({ traceId }) })
})

/**
 * Sets attributes on the current span (the call's): `Effect.annotateCurrentSpan`
 * with a record reads the fiber once for all of them.
 */
export const annotate = (attributes: Record<string, unknown>): Effect.Effect<void> =>
  Effect.annotateCurrentSpan(attributes)

/** Runs a call in its span, recording the failure's attributes on the span when it fails. */
export const traced =
  (name: string) =>
  <A, E extends Errors.ServiceError | Errors.TokenError | Errors.InvalidCardInput, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> =>
    effect.pipe(
      Effect.tapError((error) => annotate(failureAttributes(error))),
      // No stack trace: capturing one costs more CPU per call than the rest of the span.
      Effect.withSpan(name, undefined, { captureStackTrace: false })
    )

/**
 * Adds the trace context of the current span (the call's) to a request as
 * `traceparent` and `b3` headers, as the platform's client would, unless
 * tracing (`References.TracerEnabled`), propagation
 * (`HttpClient.TracerPropagationEnabled`) or `Tracer.DisablePropagation` is
 * off. It runs inside the `HttpClient`, so that a reference set on the client
 * given to the layer (`HttpClient.transformResponse(Effect.provideService(...))`)
 * is honoured too.
 */
export const propagateTrace = (
  request: HttpClientRequest.HttpClientRequest
): Effect.Effect<HttpClientRequest.HttpClientRequest> =>
  Effect.withFiber((fiber) => {
    const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    return Effect.succeed(
      span !== undefined && span._tag === "Span" && fiber.getRef(HttpClient.TracerPropagationEnabled) &&
        fiber.getRef(References.TracerEnabled) && !fiber.getRef(Tracer.DisablePropagation)
        ? HttpClientRequest.setHeaders(request, HttpTraceContext.toHeaders(span))
        : request
    )
  })
