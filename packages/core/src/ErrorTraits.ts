/**
 * What each error of the taxonomy (`Errors`) means for recovery: its group,
 * and whether it is transient, retried, or meant for the customer. Plain data
 * with no schema, so that a program can classify failures (`gcx`'s exit codes)
 * without building the error classes; `Errors` re-exports all of it.
 */
import * as Option from "effect/Option"
import type { QuoteFailure } from "./ErrorTaxonomy.js"

/** The recovery groups of ARCHITECTURE.md. */
export type ErrorGroup = "card" | "merchant" | "request" | "service" | "transport" | "unknown" | "local"

/**
 * What each error means for recovery.
 * - `transient`: the condition may pass by itself (by tag; `isTransient` also
 *   looks at a `TokenError`'s status: an outage of the token endpoint is).
 * - `retryable`: the SDK retries it automatically (within its budget).
 * - `customerFacing`: its userMessage is meant for the customer or agent.
 */
export interface ErrorTraits {
  readonly group: ErrorGroup
  readonly transient: boolean
  readonly retryable: boolean
  readonly customerFacing: boolean
}

const traits = (
  group: ErrorGroup,
  transient: boolean,
  retryable: boolean,
  customerFacing: boolean
): ErrorTraits => ({ group, transient, retryable, customerFacing })

/** The traits of every error, by tag. */
export const Traits: { readonly [Tag in QuoteFailure["_tag"]]: ErrorTraits } = {
  InvalidCard: traits("card", false, false, true),
  CardValueOutOfRange: traits("card", false, false, true),
  CardNotAccepted: traits("card", false, false, true),
  OfferExpired: traits("card", false, false, true),
  MerchantUnavailable: traits("merchant", true, false, true),
  MissingRequestId: traits("request", false, false, false),
  InvalidApiKey: traits("request", false, false, false),
  PartnerNotFound: traits("request", false, false, false),
  TransactionNotFound: traits("request", false, false, false),
  InvalidRequest: traits("request", false, false, false),
  ServerError: traits("service", true, true, false),
  ServiceUnavailable: traits("service", true, true, false),
  RateLimited: traits("service", true, true, false),
  Unauthorized: traits("service", true, true, false),
  TransportError: traits("transport", true, true, false),
  UnexpectedResponse: traits("transport", false, false, false),
  UnknownServiceError: traits("unknown", false, false, true),
  PollTimeout: traits("local", true, false, false),
  TokenError: traits("local", false, false, false),
  InvalidCardInput: traits("local", false, false, false),
  CardDecryptionError: traits("local", false, false, false),
  RequestIdConflict: traits("request", false, false, false)
}

/** The recovery group of an error. */
export const groupOf = (error: QuoteFailure): ErrorGroup => Traits[error._tag].group

/**
 * Whether the condition behind an error may pass by itself: its tag's
 * `transient`, except for a `TokenError`, which is transient when the token
 * endpoint did not answer, or answered 429 or 5xx (an outage), and not when
 * it refused the credentials.
 */
export const isTransient = (error: QuoteFailure): boolean =>
  error._tag === "TokenError"
    ? error.httpStatus === undefined || error.httpStatus === 429 || error.httpStatus >= 500
    : Traits[error._tag].transient

/** The tags of the service's and the network's outages (see `isOutage`). */
const outageTags: ReadonlySet<QuoteFailure["_tag"]> = new Set([
  "TransportError",
  "ServiceUnavailable",
  "RateLimited",
  "ServerError"
])

/**
 * Whether an error says the service was out rather than anything of the
 * request: it did not answer (`TransportError`), answered 503 or 429, or
 * failed (`ServerError`), or its token endpoint was out (a transient
 * `TokenError`). Such a POST may be sent again later with the same requestId
 * (a durable quote pauses, then does). Never a card's or a merchant's
 * outcome, a refused request or refused credentials (`Unauthorized`), or a
 * local error.
 */
export const isOutage = (error: QuoteFailure): boolean =>
  error._tag === "TokenError" ? isTransient(error) : outageTags.has(error._tag)

/** Whether the SDK retries an error automatically. Card outcomes and MerchantUnavailable are never retried. */
export const isRetryable = (error: QuoteFailure): boolean => Traits[error._tag].retryable

/** Whether an error's userMessage is meant for the customer or agent. */
export const isCustomerFacing = (error: QuoteFailure): boolean => Traits[error._tag].customerFacing

/**
 * The user message to show a customer for an error, if it has one meant for them.
 *
 * @example
 * import { Errors } from "@gcx/core"
 * import { Effect, Option } from "effect"
 *
 * // What to tell the customer when a quote fails.
 * const answer = (error: Errors.QuoteFailure): Effect.Effect<string> =>
 *   Effect.succeed(
 *     Option.getOrElse(Errors.customerMessage(error), () =>
 *       Errors.isTransient(error) ? "Please try again in a moment." : "We could not check this card.")
 *   )
 */
export const customerMessage = (error: QuoteFailure): Option.Option<string> =>
  isCustomerFacing(error) && "userMessage" in error && typeof error.userMessage === "string"
    ? Option.some(error.userMessage)
    : Option.none()
