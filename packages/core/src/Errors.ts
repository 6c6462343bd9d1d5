/**
 * The error taxonomy of gcx (ARCHITECTURE.md, "Errors"), as `Schema.TaggedError`
 * classes grouped so that recovery is a `catchTag` away, and the one function
 * that turns an HTTP answer into the right error.
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { ErrorBody, ErrorCodes, normalizeKeys } from "./ErrorBody.js"
import { describeParseIssue, serviceText, traceId as keptTraceId } from "./Redaction.js"

const opt = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

/**
 * What every error from the service carries, where known. `message` is the
 * service's Message (for logs); `userMessage` its UserMessage (for the customer
 * when `isCustomerFacing` says so).
 */
export const ServiceErrorFields = {
  message: Schema.String,
  errorCode: opt(Schema.String),
  userMessage: opt(Schema.String),
  moreInfoUrl: opt(Schema.String),
  httpStatus: opt(Schema.Number),
  traceId: opt(Schema.String),
  requestId: opt(Schema.String),
  transactionId: opt(Schema.String),
  retryAfterMillis: opt(Schema.Number),
  attempts: opt(Schema.Number),
  retryDelayMillis: opt(Schema.Number)
}

/** The constructor argument shared by every service error. */
export type ServiceErrorProps = Schema.Struct.Constructor<typeof ServiceErrorFields>

// Card outcomes: show userMessage to the customer; do not retry.

/** The merchant did not accept the card number or PIN (`exchange.invalid.card`). */
export class InvalidCard extends Schema.TaggedError<InvalidCard>()("InvalidCard", ServiceErrorFields) {}

/** The card balance is zero or the card account is closed (`exchange.card.value.out.of.range`). */
export class CardValueOutOfRange
  extends Schema.TaggedError<CardValueOutOfRange>()("CardValueOutOfRange", ServiceErrorFields)
{}

/** The card cannot be accepted; userMessage says why (`exchange.card.not.accepted`, `exchange.card.is.unacceptable`). */
export class CardNotAccepted extends Schema.TaggedError<CardNotAccepted>()("CardNotAccepted", ServiceErrorFields) {}

/** The offer has expired (`exchange.offer.code.expired`, 409): submit a new quote. */
export class OfferExpired extends Schema.TaggedError<OfferExpired>()("OfferExpired", ServiceErrorFields) {}

// Merchant outcome: tell the customer to retry later.

/** No status or balance can be had from the merchant (`exchange.card.merchant.unavailable`). */
export class MerchantUnavailable
  extends Schema.TaggedError<MerchantUnavailable>()("MerchantUnavailable", ServiceErrorFields)
{}

// Request and partner: a configuration or programming fault.

/** The requestId header was missing (`request.missing.parameter.requestId`, `exchange.requestId.header.required`). */
export class MissingRequestId extends Schema.TaggedError<MissingRequestId>()("MissingRequestId", ServiceErrorFields) {}

/** The x-api-key header is invalid (`exchange.invalid.x-api-key`). */
export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()("InvalidApiKey", ServiceErrorFields) {}

/** The partner is not recognized (`exchange.partner.not.found`, 400 or 404). */
export class PartnerNotFound extends Schema.TaggedError<PartnerNotFound>()("PartnerNotFound", ServiceErrorFields) {}

/** No transaction has that id (`exchange.transaction.not.found`, 404). */
export class TransactionNotFound
  extends Schema.TaggedError<TransactionNotFound>()("TransactionNotFound", ServiceErrorFields)
{}

/** The service refused a parameter or the body (unknown product line, malformed or oversized body, reused requestId). */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", ServiceErrorFields) {}

// Service: transient, retried by the SDK within a budget.

/** HTTP 500: an infrastructure or configuration fault (also `exchange.error.heartbeat`). */
export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", ServiceErrorFields) {}

/** HTTP 502, 503 or 504: the service is unavailable. */
export class ServiceUnavailable
  extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", ServiceErrorFields)
{}

/** HTTP 429: too many requests. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", ServiceErrorFields) {}

/** HTTP 401: the bearer token was refused (missing, expired or forged). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", ServiceErrorFields) {}

// Transport and shape.

/** The request got no HTTP answer: connection refused or reset, timeout, DNS. */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  ...ServiceErrorFields,
  reason: Schema.Literal("Connect", "Reset", "Timeout", "Aborted", "Other")
}) {}

/**
 * The answer could not be used: its body did not decode as what the status
 * promised (`reason` absent), it was a redirect, which gcx never follows
 * (`Redirect`: the message names the status and the `Location`), or it was
 * larger than the client's `maxResponseBytes` and was not read (`TooLarge`).
 */
export class UnexpectedResponse extends Schema.TaggedError<UnexpectedResponse>()("UnexpectedResponse", {
  ...ServiceErrorFields,
  reason: opt(Schema.Literal("Redirect", "TooLarge"))
}) {}

// Catch-all.

/** An error code gcx does not know; its code, status and messages are kept. */
export class UnknownServiceError
  extends Schema.TaggedError<UnknownServiceError>()("UnknownServiceError", ServiceErrorFields)
{}

// Local.

/** The polling deadline passed; `transactionId` is kept so the caller can resume with `track`. */
export class PollTimeout extends Schema.TaggedError<PollTimeout>()("PollTimeout", {
  transactionId: Schema.String,
  deadlineMillis: Schema.Number,
  polls: Schema.Number,
  lastPercentComplete: opt(Schema.Number)
}) {
  override get message(): string {
    return `transaction ${this.transactionId} did not complete within ${this.deadlineMillis} ms (${this.polls} polls); resume it with track`
  }
}

/** The token endpoint refused the credentials or could not be reached. */
export class TokenError extends Schema.TaggedError<TokenError>()("TokenError", {
  message: Schema.String,
  httpStatus: opt(Schema.Number),
  oauthError: opt(Schema.String),
  traceId: opt(Schema.String)
}) {}

/** Card input refused before any I/O. Names the field; never echoes the value. */
export class InvalidCardInput extends Schema.TaggedError<InvalidCardInput>()("InvalidCardInput", {
  field: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.field} ${this.reason}`
  }
}

/**
 * A durable quote's sealed card could not be opened where it runs: a local
 * fault of configuration (the data keys), never the service's. `keyId` is the
 * id of the key that sealed it, when the card records one and neither key
 * here has it; `reason` says what failed. Says nothing of the card.
 */
export class CardDecryptionError extends Schema.TaggedError<CardDecryptionError>()("CardDecryptionError", {
  requestId: Schema.String,
  reason: Schema.String,
  keyId: opt(Schema.String)
}) {
  override get message(): string {
    return this.keyId !== undefined
      ? `the card of quote ${this.requestId} was sealed with the data key ${this.keyId}, which is neither ` +
        `GCX_DATA_KEY nor GCX_DATA_KEY_PREVIOUS: set GCX_DATA_KEY_PREVIOUS to that key`
      : `the card of quote ${this.requestId} could not be opened (${this.reason}): neither GCX_DATA_KEY nor ` +
        `GCX_DATA_KEY_PREVIOUS is the key it was sealed with; set GCX_DATA_KEY_PREVIOUS to that key`
  }
}

/** Every error the service side can produce (HTTP, transport, shape). */
export type ServiceError =
  | InvalidCard
  | CardValueOutOfRange
  | CardNotAccepted
  | OfferExpired
  | MerchantUnavailable
  | MissingRequestId
  | InvalidApiKey
  | PartnerNotFound
  | TransactionNotFound
  | InvalidRequest
  | ServerError
  | ServiceUnavailable
  | RateLimited
  | Unauthorized
  | TransportError
  | UnexpectedResponse
  | UnknownServiceError

/** Every error that can end a quote. */
export type QuoteFailure = ServiceError | PollTimeout | TokenError | InvalidCardInput | CardDecryptionError

/** The schema of `QuoteFailure`, so that a failure encodes to JSON as data. */
export const QuoteFailure: Schema.Schema<QuoteFailure, Schema.Schema.Encoded<typeof QuoteFailureMembers[number]>> =
  Schema.suspend(() => Schema.Union(...QuoteFailureMembers))

const QuoteFailureMembers = [
  InvalidCard,
  CardValueOutOfRange,
  CardNotAccepted,
  OfferExpired,
  MerchantUnavailable,
  MissingRequestId,
  InvalidApiKey,
  PartnerNotFound,
  TransactionNotFound,
  InvalidRequest,
  ServerError,
  ServiceUnavailable,
  RateLimited,
  Unauthorized,
  TransportError,
  UnexpectedResponse,
  UnknownServiceError,
  PollTimeout,
  TokenError,
  InvalidCardInput,
  CardDecryptionError
] as const

export type { ErrorGroup, ErrorTraits } from "./ErrorTraits.js"
export { customerMessage, groupOf, isCustomerFacing, isRetryable, isTransient, Traits } from "./ErrorTraits.js"

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

const parseJson = (text: string): Either.Either<unknown, string> =>
  Either.try({ try: () => JSON.parse(text) as unknown, catch: () => "the body is not JSON" })

const decodeErrorBody = ParseResult.decodeUnknownEither(ErrorBody)

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
    Either.flatMap((json) =>
      decodeErrorBody(normalizeKeys(json)).pipe(Either.mapLeft((error) => describeParseIssue(error)))
    )
  )
  return Either.match(body, {
    onLeft: (reason) => {
      const StatusClass = byStatus(answer.status)
      return StatusClass !== undefined
        ? new StatusClass(definedProps({ ...common, message: `HTTP ${answer.status}` }))
        : new UnexpectedResponse(
          definedProps({ ...common, message: `HTTP ${answer.status} without an Error body: ${reason}` })
        )
    },
    onRight: (error) => {
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
  cause: ParseResult.ParseError | string
): UnexpectedResponse =>
  new UnexpectedResponse(definedProps({
    ...context,
    message: `the service's answer did not decode: ${
      typeof cause === "string" ? cause : describeParseIssue(cause.issue)
    }`
  }))

/** A copy of a service error that records the attempts made and the total delay spent retrying. */
export const withAttempts = <E extends ServiceError>(error: E, attempts: number, retryDelay: Duration.Duration): E => {
  const ErrorClass = error.constructor as new(props: ServiceErrorProps) => E
  const { _tag: _, ...props } = error as ServiceError
  return new ErrorClass({ ...props, message: error.message, attempts, retryDelayMillis: Duration.toMillis(retryDelay) })
}
