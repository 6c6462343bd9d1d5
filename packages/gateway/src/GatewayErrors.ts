/**
 * The error answers of the gateway: always `{ "error": { "code", "message" } }`,
 * one class per status so that each encodes with its own (the platform tells
 * them apart by class). A message names the field at fault, never its value:
 * no card data reaches an error.
 *
 * | code | status |
 * |---|---|
 * | `invalid_request` | 400 |
 * | `unauthorized` | 401 (with `WWW-Authenticate: Bearer`) |
 * | `not_found` | 404 |
 * | `method_not_allowed` | 405 (with `Allow`) |
 * | `idempotency_key_reused` | 409 |
 * | `payload_too_large` | 413 |
 * | `unsupported_media_type` | 415 |
 * | `rate_limited` | 429 (with `Retry-After`) |
 * | `internal` | 500 |
 * | `unavailable` | 503 |
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as SqlError from "effect/sql/SqlError"

/** The codes of the gateway's errors. */
export const Code = Schema.Literals([
  "invalid_request",
  "unauthorized",
  "not_found",
  "method_not_allowed",
  "idempotency_key_reused",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "internal",
  "unavailable"
])

/** A code of the gateway's errors. */
export type Code = typeof Code.Type

/** What went wrong: a stable code and a message for the developer. */
export const Detail = Schema.Struct({
  code: Code,
  message: Schema.String
}).annotate({ identifier: "ErrorDetail" })

const fields = { error: Detail }

/** 400: a bad body, header or id; the message names the field. */
export class InvalidRequest extends Schema.Error<InvalidRequest>("InvalidRequest")(fields, {
  httpApiStatus: 400,
  description: "`invalid_request`: a bad body, header or id; the message names the field and never echoes a card"
}) {}

/** 401: the API key is missing, unknown or revoked. */
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(fields, {
  httpApiStatus: 401,
  description: "`unauthorized`: the API key is missing, unknown or revoked (with `WWW-Authenticate: Bearer`)"
}) {}

/** 404: no quote of this caller has this id. */
export class NotFound extends Schema.Error<NotFound>("NotFound")(fields, {
  httpApiStatus: 404,
  description: "`not_found`: no quote of this API key has this id (another key's quote is not found either)"
}) {}

/** 409: the Idempotency-Key was used with another card. */
export class IdempotencyKeyReused extends Schema.Error<IdempotencyKeyReused>("IdempotencyKeyReused")(fields, {
  httpApiStatus: 409,
  description: "`idempotency_key_reused`: this Idempotency-Key was used with another card; use a new key"
}) {}

/** 413: the body is larger than the gateway takes. */
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(fields, {
  httpApiStatus: 413,
  description: "`payload_too_large`: the request body is larger than 16 KiB"
}) {}

/** 415: the body is not JSON as the gateway reads it. */
export class UnsupportedMediaType extends Schema.Error<UnsupportedMediaType>("UnsupportedMediaType")(fields, {
  httpApiStatus: 415,
  description: "`unsupported_media_type`: the body must be `application/json` (UTF-8), not encoded " +
    "(no `Content-Encoding`)"
}) {}

/** 429: the caller's rate limit is spent, or its key holds as many open streams and waits as it may. */
export class TooManyRequests extends Schema.Error<TooManyRequests>("TooManyRequests")(fields, {
  httpApiStatus: 429,
  description: "`rate_limited`: the API key's rate limit is spent, the Idempotency-Key's conflicts ran out, or " +
    "(an event stream) the key holds as many open event streams and waiting POSTs as it may on this gateway; " +
    "retry after `Retry-After` seconds"
}) {}

/** 500: a fault of the gateway. */
export class Internal extends Schema.Error<Internal>("Internal")(fields, {
  httpApiStatus: 500,
  description: "`internal`: a fault of the gateway; the quote may or may not be recorded, retry with the same key"
}) {}

/** 503: the gateway cannot serve now (its database). */
export class Unavailable extends Schema.Error<Unavailable>("Unavailable")(fields, {
  httpApiStatus: 503,
  description: "`unavailable`: the gateway's database cannot be reached; retry with the same key"
}) {}

/** Every error class of the gateway. */
export type GatewayError =
  | InvalidRequest
  | Unauthorized
  | NotFound
  | IdempotencyKeyReused
  | PayloadTooLarge
  | UnsupportedMediaType
  | TooManyRequests
  | Internal
  | Unavailable

/** A 400 naming what is wrong. */
export const invalidRequest = (message: string): InvalidRequest =>
  new InvalidRequest({ error: { code: "invalid_request", message } })

/** The 401 of a missing, unknown or revoked key (never names the key). */
export const unauthorized: Unauthorized = new Unauthorized({
  error: { code: "unauthorized", message: "the API key is missing, unknown or revoked" }
})

/** The 404 of a quote this caller does not have. */
export const notFound: NotFound = new NotFound({ error: { code: "not_found", message: "no quote has this id" } })

/** The 409 of an Idempotency-Key used with another card. */
export const idempotencyKeyReused: IdempotencyKeyReused = new IdempotencyKeyReused({
  error: {
    code: "idempotency_key_reused",
    message: "this Idempotency-Key was used with another card: use a new key for a new card"
  }
})

/** The 413 of a body over `maxBytes`. */
export const payloadTooLarge = (maxBytes: number): PayloadTooLarge =>
  new PayloadTooLarge({
    error: { code: "payload_too_large", message: `the request body is larger than ${maxBytes} bytes` }
  })

/** The 415 of a body that is not plain JSON, saying what to send. */
export const unsupportedMediaType = (message: string): UnsupportedMediaType =>
  new UnsupportedMediaType({ error: { code: "unsupported_media_type", message } })

/** The 429 of a spent rate limit. */
export const tooManyRequests = (retryAfterSeconds: number): TooManyRequests =>
  new TooManyRequests({
    error: { code: "rate_limited", message: `rate limit exceeded: retry after ${retryAfterSeconds} s` }
  })

/** How long a caller refused for the streams it holds is told to wait (`Retry-After`), in seconds. */
export const heldRetryAfterSeconds = 15

/**
 * The 429 of an API key that holds as many open event streams and waiting POSTs as it may on this
 * gateway (with `Retry-After: heldRetryAfterSeconds`).
 */
export const tooManyHeld: TooManyRequests = new TooManyRequests({
  error: {
    code: "rate_limited",
    message: "this API key holds as many open event streams and waiting POSTs as it may on this gateway: " +
      `close one, or retry after ${heldRetryAfterSeconds} s`
  }
})

/** The 500 of a fault (the body says nothing of it; the log has it). */
export const internal: Internal = new Internal({ error: { code: "internal", message: "internal error" } })

/** The 503 of a database that cannot be reached. */
export const unavailable: Unavailable = new Unavailable({
  error: { code: "unavailable", message: "the gateway's database cannot be reached" }
})

/** A database failure as the 503: logged by its reason only (a database's message may quote a statement's values). */
export const unavailableOn = (error: SqlError.SqlError): Effect.Effect<never, Unavailable> =>
  Effect.andThen(
    Effect.logWarning("gateway database failure").pipe(Effect.annotateLogs({ reason: error.reason._tag })),
    Effect.fail(unavailable)
  )

/** The JSON text of an error body, for answers made outside the API (unknown routes, defects, 413). */
export const bodyOf = (code: Code, message: string): string => JSON.stringify({ error: { code, message } })
