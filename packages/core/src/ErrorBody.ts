/**
 * The Error body of spec 2.4 and every error code the spec and service-notes.md
 * document.
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { optional } from "./Wire.js"

/** The error body as the service spells it (capitalised fields; `MoreInfoUrl` when present). */
export class ErrorBody extends Schema.Class<ErrorBody>("@gcx/core/ErrorBody")({
  ErrorCode: Schema.String,
  Message: optional(Schema.String),
  UserMessage: optional(Schema.String),
  MoreInfoUrl: optional(Schema.String)
}) {}

/** Error codes documented by the spec (section 7) and service-notes.md, plus the ones the sandbox uses. */
export const ErrorCodes = {
  cardValueOutOfRange: "exchange.card.value.out.of.range",
  invalidCard: "exchange.invalid.card",
  cardNotAccepted: "exchange.card.not.accepted",
  cardIsUnacceptable: "exchange.card.is.unacceptable",
  merchantUnavailable: "exchange.card.merchant.unavailable",
  offerCodeExpired: "exchange.offer.code.expired",
  missingRequestId: "request.missing.parameter.requestId",
  requestIdHeaderRequired: "exchange.requestId.header.required",
  partnerNotFound: "exchange.partner.not.found",
  invalidApiKey: "exchange.invalid.x-api-key",
  transactionNotFound: "exchange.transaction.not.found",
  heartbeatFailed: "exchange.error.heartbeat",
  invalidProductLine: "exchange.invalid.productLine",
  invalidParameter: "request.invalid.parameter",
  invalidBody: "request.invalid.body",
  bodyTooLarge: "request.body.too.large",
  duplicateRequest: "request.duplicate.requestId",
  unauthorized: "exchange.unauthorized",
  serverError: "Error",
  serviceUnavailable: "Service Unavailable",
  routeNotFound: "request.route.not.found"
} as const

/** Field spellings that some gateways use instead of the capitalised ones. */
const aliases: ReadonlyArray<readonly [keyof ErrorBody, ReadonlyArray<string>]> = [
  ["ErrorCode", ["errorCode", "error_code", "code"]],
  ["Message", ["message"]],
  ["UserMessage", ["userMessage", "user_message"]],
  ["MoreInfoUrl", ["moreInfoUrl", "more_info_url"]]
]

/**
 * Copies alias spellings (`errorCode`, `userMessage`, ...) onto the canonical
 * field names, so that the tolerant reader accepts both.
 */
export const normalizeKeys = (body: unknown): unknown => {
  if (!Predicate.isObject(body)) return body
  const record = body
  const out: Record<PropertyKey, unknown> = { ...record }
  for (const [canonical, spellings] of aliases) {
    // a canonical field that is absent, null or not a string gives way to a string alias
    if (typeof out[canonical] === "string") continue
    const found = spellings.find((spelling) => typeof record[spelling] === "string")
    if (found !== undefined) out[canonical] = record[found]
  }
  return out
}
