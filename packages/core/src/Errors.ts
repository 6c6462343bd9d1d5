/**
 * The error taxonomy of gcx (ARCHITECTURE.md, "Errors"), as `Schema.TaggedError`
 * classes grouped so that recovery is a `catchTag` away (`ErrorTaxonomy`),
 * what each means for recovery (`ErrorTraits`), and the one function that
 * turns an HTTP answer into the right error.
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { ErrorBody, ErrorCodes, normalizeKeys } from "./ErrorBody.js"
import {
  CardNotAccepted,
  CardValueOutOfRange,
  InvalidApiKey,
  InvalidCard,
  InvalidRequest,
  MerchantUnavailable,
  MissingRequestId,
  OfferExpired,
  PartnerNotFound,
  type QuoteFailure,
  RateLimited,
  ServerError,
  type ServiceError,
  type ServiceErrorProps,
  ServiceUnavailable,
  type TokenError,
  TransactionNotFound,
  Unauthorized,
  UnexpectedResponse,
  UnknownServiceError
} from "./ErrorTaxonomy.js"
import { describeParseIssue, serviceText, traceId as keptTraceId } from "./Redaction.js"

/** The error classes and their union schema (`ErrorTaxonomy`). */
export * from "./ErrorTaxonomy.js"
export type {
  /** The recovery groups of ARCHITECTURE.md. */
  ErrorGroup,
  /** What an error means for recovery, as plain data (`Traits`). */
  ErrorTraits
} from "./ErrorTraits.js"
export {
  /** The user message to show a customer for an error, if it has one meant for them. */
  customerMessage,
  /** The recovery group of an error. */
  groupOf,
  /** Whether an error's userMessage is meant for the customer or agent. */
  isCustomerFacing,
  /** Whether an error says the service was out rather than anything of the request. */
  isOutage,
  /** Whether the SDK retries an error automatically. */
  isRetryable,
  /** Whether the condition behind an error may pass by itself. */
  isTransient,
  /** The traits of every error, by tag. */
  Traits
} from "./ErrorTraits.js"

/** The classes that a documented error code maps to, aliases included. */
const byCode: Readonly<Record<string, ServiceErrorClass>> = {
  [ErrorCodes.cardValueOutOfRange]: CardValueOutOfRange,
  [ErrorCodes.invalidCard]: InvalidCard,
  [ErrorCodes.cardNotAccepted]: CardNotAccepted,
  [ErrorCodes.cardIsUnacceptable]: CardNotAccepted,
  [ErrorCodes.merchantUnavailable]: MerchantUnavailable,
  [ErrorCodes.offerCodeExpired]: OfferExpired,
  [ErrorCodes.missingRequestId]: MissingRequestId,
  [ErrorCodes.requestIdHeaderRequired]: MissingRequestId,
  [ErrorCodes.partnerNotFound]: PartnerNotFound,
  [ErrorCodes.invalidApiKey]: InvalidApiKey,
  [ErrorCodes.transactionNotFound]: TransactionNotFound,
  [ErrorCodes.heartbeatFailed]: ServerError,
  [ErrorCodes.invalidProductLine]: InvalidRequest,
  [ErrorCodes.invalidParameter]: InvalidRequest,
  [ErrorCodes.invalidBody]: InvalidRequest,
  [ErrorCodes.bodyTooLarge]: InvalidRequest,
  [ErrorCodes.duplicateRequest]: InvalidRequest,
  [ErrorCodes.unauthorized]: Unauthorized
}

type ServiceErrorClass = new(props: ServiceErrorProps) => ServiceError

/** The class for an HTTP status when the code is unknown or there is no Error body. */
const byStatus = (status: number): ServiceErrorClass | undefined => {
  if (status === 401) return Unauthorized
  if (status === 429) return RateLimited
  if (status === 500) return ServerError
  if (status === 502 || status === 503 || status === 504) return ServiceUnavailable
  return undefined
}

/**
 * The class a documented error code maps to, if any. Only the table's own keys
 * count, so that a code such as `toString` or `__proto__` is an unknown code.
 */
export const classForCode = (errorCode: string): ServiceErrorClass | undefined =>
  Object.prototype.hasOwnProperty.call(byCode, errorCode) ? byCode[errorCode] : undefined

/** An HTTP answer, as far as error mapping needs it. */
export interface HttpAnswer {
  readonly status: number
  /** Header values by name; names are matched case-insensitively. */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: string
  /** The requestId the request was sent with. */
  readonly requestId?: string | undefined
  /** The transaction the request was about, if any. */
  readonly transactionId?: string | undefined
  /** Epoch milliseconds now, to read a `Retry-After` HTTP date. */
  readonly now?: number | undefined
}

/** A header's value, matched case-insensitively; the first value when repeated. */
export const headerValue = (headers: HttpAnswer["headers"], name: string): string | undefined => {
  const wanted = name.toLowerCase()
  for (const key in headers) {
    if (key.toLowerCase() !== wanted) continue
    const value = headers[key]
    return typeof value === "string" ? value : value?.[0]
  }
  return undefined
}

/**
 * The shape of an HTTP date (RFC 9110: IMF-fixdate, RFC 850 or asctime), which
 * all start with a day name. `Date.parse` alone accepts garbage such as
 * `hello 2020` or `-1`.
 */
const httpDate = /^(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+\S/i

/**
 * Reads `Retry-After`: delta-seconds, or an HTTP date relative to `now`.
 * Returns milliseconds, never negative; `undefined` for anything else.
 */
export const parseRetryAfter = (value: string | undefined, now?: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    const millis = Math.round(Number(trimmed) * 1000)
    return Number.isFinite(millis) ? millis : undefined
  }
  if (now === undefined || !httpDate.test(trimmed)) return undefined
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const definedProps = (
  props: { readonly [K in keyof ServiceErrorProps]?: ServiceErrorProps[K] | undefined } & { readonly message: string }
): ServiceErrorProps => {
  const out: Record<string, unknown> = {}
  for (const key in props) {
    const value = props[key as keyof typeof props]
    if (value !== undefined) out[key] = value
  }
  return out as ServiceErrorProps
}

const parseJson = (text: string): Result.Result<unknown, string> =>
  Result.try({ try: () => JSON.parse(text) as unknown, catch: () => "the body is not JSON" })

const decodeErrorBody = Schema.decodeUnknownResult(ErrorBody)

/**
 * Turns a non-2xx HTTP answer into the right typed error (spec section 7 and
 * service-notes.md, aliases included):
 * - a documented ErrorCode maps to its class whatever the status;
 * - otherwise 401, 429, 500 and 502–504 map by status (their bodies need not be an Error);
 * - any other Error body is an `UnknownServiceError` that keeps code, status and messages;
 * - anything else is an `UnexpectedResponse`.
 *
 * The server's text (ErrorCode, Message, UserMessage, MoreInfoUrl) goes
 * through `Redaction.serviceText` (masked, cut to 1,024 characters), so that
 * an echoed card number or a huge text goes no further; the class is picked
 * from the ErrorCode as sent. The SVC-TRACE-ID is kept only when it looks like
 * one (`Redaction.traceId`).
 */
export const fromResponse = (answer: HttpAnswer): ServiceError => {
  const traceId = keptTraceId(headerValue(answer.headers, "svc-trace-id"))
  const common = {
    httpStatus: answer.status,
    traceId,
    requestId: answer.requestId,
    transactionId: answer.transactionId,
    retryAfterMillis: parseRetryAfter(headerValue(answer.headers, "retry-after"), answer.now)
  }
  const body = parseJson(answer.body).pipe(
    Result.flatMap((json) =>
      decodeErrorBody(normalizeKeys(json)).pipe(Result.mapError((error) => describeParseIssue(error.issue)))
    )
  )
  return Result.match(body, {
    onFailure: (reason) => {
      const StatusClass = byStatus(answer.status)
      return StatusClass !== undefined
        ? new StatusClass(definedProps({ ...common, message: `HTTP ${answer.status}` }))
        : new UnexpectedResponse(
          definedProps({ ...common, message: `HTTP ${answer.status} without an Error body: ${reason}` })
        )
    },
    onSuccess: (error) => {
      const ErrorClass = classForCode(error.ErrorCode) ?? byStatus(answer.status) ?? UnknownServiceError
      return new ErrorClass(definedProps({
        ...common,
        errorCode: serviceText(error.ErrorCode),
        message: serviceText(error.Message ?? `${error.ErrorCode} (HTTP ${answer.status})`),
        userMessage: error.UserMessage === undefined ? undefined : serviceText(error.UserMessage),
        moreInfoUrl: error.MoreInfoUrl === undefined ? undefined : serviceText(error.MoreInfoUrl)
      }))
    }
  })
}

/** What is known of a request when its answer did not decode. */
export interface UnexpectedContext {
  readonly httpStatus?: number | undefined
  readonly traceId?: string | undefined
  readonly requestId?: string | undefined
  readonly transactionId?: string | undefined
}

/** An `UnexpectedResponse` for a body that did not decode, naming the paths but never the values. */
export const unexpectedResponse = (
  context: UnexpectedContext,
  cause: Schema.SchemaError | string
): UnexpectedResponse =>
  new UnexpectedResponse(definedProps({
    ...context,
    message: `the service's answer did not decode: ${
      typeof cause === "string" ? cause : describeParseIssue(cause.issue)
    }`
  }))

/** Why the retries of a call stopped, when not at its cap or its error (see `withAttempts`). */
export interface Stopped {
  /** The client's retry budget had no retry left. */
  readonly retryBudgetExhausted: boolean
}

/** What is known of the POST an error ends (see `withAttempts`). */
export interface PostFailure {
  /** The POST's requestId (a service error carries it already; a `TokenError` gets it here). */
  readonly requestId: string
  /** Whether one of its attempts may have been processed: no answer, a cut or garbled one, a 500, 502 or 504. */
  readonly outcomeUnknown: boolean
}

/**
 * A copy of the error a call ended with (a service error or a `TokenError`)
 * that records the attempts made and the total delay spent retrying; for an
 * error that ends a POST one of whose attempts may have been processed,
 * `outcomeUnknown`, and on a `TokenError` the POST's `requestId` too; and
 * `retryBudgetExhausted` when the client's retry budget stopped its retries.
 */
export const withAttempts = <E extends ServiceError | TokenError>(
  error: E,
  attempts: number,
  retryDelay: Duration.Duration,
  post?: PostFailure | undefined,
  stopped?: Stopped | undefined
): E => {
  const ErrorClass = error.constructor as new(props: object) => E
  const { _tag: _, ...props } = error as ServiceError | TokenError
  return new ErrorClass({
    ...props,
    message: error.message,
    attempts,
    retryDelayMillis: Duration.toMillis(retryDelay),
    ...(post?.outcomeUnknown === true
      ? { outcomeUnknown: true, ...(error._tag === "TokenError" ? { requestId: post.requestId } : {}) }
      : {}),
    ...(stopped?.retryBudgetExhausted === true ? { retryBudgetExhausted: true } : {})
  })
}

/** The wait the service asked for with an error (its `Retry-After`), in milliseconds, if any. */
export const retryAfterOf = (error: QuoteFailure): number | undefined =>
  "retryAfterMillis" in error ? error.retryAfterMillis : undefined

/** What resumes a POST: its requestId, and the attempts made with it before (`previousAttempts`). */
export interface PostResumption {
  readonly requestId: string
  readonly previousAttempts: number
}

/**
 * How to resume the POST that `error` ended, when one of its attempts may
 * have created the transaction (`outcomeUnknown`: no answer, a cut or garbled
 * one, a 500, 502 or 504, then failures to the attempts cap): quote the same
 * card again with the same requestId and `previousAttempts` the attempts
 * made, and the service answers that transaction, or creates it, never a
 * second one. `None` for any other error: one of a POST whose attempts were
 * all refused before processing (a refused connection, a 503, a 429, a 401, a
 * token failure), a card outcome, a request fault, a local error, and any
 * error of a GET.
 */
export const postResumption = (error: QuoteFailure): Option.Option<PostResumption> =>
  "outcomeUnknown" in error && error.outcomeUnknown === true && error.requestId !== undefined &&
    error.attempts !== undefined
    ? Option.some({ requestId: error.requestId, previousAttempts: error.attempts })
    : Option.none()
