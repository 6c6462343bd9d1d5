/**
 * The error taxonomy of gcx (ARCHITECTURE.md, "Errors"): every error a quote
 * can end with, as `Schema.TaggedError` classes grouped so that recovery is a
 * `catchTag` away, and `QuoteFailure`, their schema as one union, so that a
 * failure encodes to JSON as data. `Errors` re-exports all of it.
 */
import * as Schema from "effect/Schema"

const opt = Schema.optionalKey

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
  retryDelayMillis: opt(Schema.Number),
  /**
   * Set on the error that ends a POST when one of its attempts may have been
   * processed, unless it is a card or merchant outcome (the service's answer):
   * see `Errors.postResumption`.
   */
  outcomeUnknown: opt(Schema.Boolean),
  /**
   * Set when the call stopped retrying because the client's retry budget
   * (`RetryBudget`: retries shared by every call of the client) had none
   * left, where it would have retried otherwise.
   */
  retryBudgetExhausted: opt(Schema.Boolean)
}

/** The constructor argument shared by every service error. */
export type ServiceErrorProps = Schema.Struct.MakeIn<typeof ServiceErrorFields>

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
  reason: Schema.Literals(["Connect", "Reset", "Timeout", "Aborted", "Other"])
}) {}

/**
 * The answer could not be used: its body did not decode as what the status
 * promised (`reason` absent), it was a redirect, which gcx never follows
 * (`Redirect`: the message names the status and the `Location`), or it was
 * larger than the client's `maxResponseBytes` and was not read (`TooLarge`).
 */
export class UnexpectedResponse extends Schema.TaggedError<UnexpectedResponse>()("UnexpectedResponse", {
  ...ServiceErrorFields,
  reason: opt(Schema.Literals(["Redirect", "TooLarge"]))
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

/**
 * The token endpoint refused the credentials or could not be reached. When it
 * ends a call to the service, it carries the call's `attempts` and
 * `retryDelayMillis`, as service errors do; when it ends a POST after an
 * attempt that may have been processed, the POST's `requestId` and
 * `outcomeUnknown` too: the request of its last attempt was not sent, but
 * that earlier one may have created the transaction, and the POST is resumed
 * with them (`Errors.postResumption`).
 */
export class TokenError extends Schema.TaggedError<TokenError>()("TokenError", {
  message: Schema.String,
  httpStatus: opt(Schema.Number),
  oauthError: opt(Schema.String),
  traceId: opt(Schema.String),
  requestId: opt(Schema.String),
  attempts: opt(Schema.Number),
  retryDelayMillis: opt(Schema.Number),
  outcomeUnknown: opt(Schema.Boolean),
  /** As on a service error: the client's retry budget had no retry left. */
  retryBudgetExhausted: opt(Schema.Boolean)
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
  keyId: opt(Schema.String),
  /**
   * The ids of the data keys of the node that tried to open it (`GCX_DATA_KEY`, then
   * `GCX_DATA_KEY_PREVIOUS`): on a cluster, a runner's, which may not be the node that shows the error.
   */
  nodeKeyIds: opt(Schema.Array(Schema.String))
}) {
  override get message(): string {
    const node = this.nodeKeyIds === undefined || this.nodeKeyIds.length === 0
      ? "GCX_DATA_KEY nor GCX_DATA_KEY_PREVIOUS"
      : `the GCX_DATA_KEY (${this.nodeKeyIds[0]})` +
        (this.nodeKeyIds.length > 1 ? ` nor the GCX_DATA_KEY_PREVIOUS (${this.nodeKeyIds[1]})` : "") +
        " of the node that opened it"
    return this.keyId !== undefined
      ? `the card of quote ${this.requestId} was sealed with the data key ${this.keyId}, which is neither ${node}: ` +
        `give every node the same GCX_DATA_KEY, or set GCX_DATA_KEY_PREVIOUS to that key`
      : `the card of quote ${this.requestId} could not be opened (${this.reason}): neither ${node} is the key it ` +
        `was sealed with; give every node the same GCX_DATA_KEY, or set GCX_DATA_KEY_PREVIOUS to that key`
  }
}

/**
 * A requestId reused with another card (Stripe's idempotency keys are the
 * model): the requestId is already recorded with a different card, so this
 * quote is refused before any I/O with the service, and never gets the other
 * card's quote. Cards are compared by a keyed fingerprint; the error names the
 * requestId only, never a card.
 */
export class RequestIdConflict extends Schema.TaggedError<RequestIdConflict>()("RequestIdConflict", {
  requestId: Schema.String
}) {
  override get message(): string {
    const shown = this.requestId.length > 80 ? `${this.requestId.slice(0, 80)}…` : this.requestId
    return `requestId ${JSON.stringify(shown)} is already recorded with another card: ` +
      `a requestId belongs to one card; give this card a new requestId`
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
export type QuoteFailure =
  | ServiceError
  | PollTimeout
  | TokenError
  | InvalidCardInput
  | CardDecryptionError
  | RequestIdConflict

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
  CardDecryptionError,
  RequestIdConflict
] as const

/** The schema of `QuoteFailure`, so that a failure encodes to JSON as data. */
export const QuoteFailure: Schema.Codec<QuoteFailure, typeof QuoteFailureMembers[number]["Encoded"]> = Schema.Union(
  QuoteFailureMembers
)
