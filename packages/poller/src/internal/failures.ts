/**
 * What a failed GET means for its quote: whether polling goes on, how long
 * the service asked to wait, how many requests it cost, and whether the
 * journal keeps the transaction once the quote has ended.
 */
import { Errors } from "@gcx/core"
import type { QuoteEvent } from "@gcx/core"

/**
 * Whether the journal keeps a transaction after this terminal event: only
 * while its outcome is unknown and can still be learnt by resuming, that is
 * after `PollTimeout` and after failures of this client's own configuration
 * or credentials (`Unauthorized`: revoked credentials).
 */
export const keepsJournalEntry = (event: QuoteEvent.Terminal): boolean =>
  event._tag === "Failed" && isOutcomeUnknown(event.error._tag)

/**
 * Whether a quote whose polling ended with an error of this tag may still
 * have an outcome to learn by tracking its transaction again (see
 * `keepsJournalEntry`).
 */
export const isOutcomeUnknown = (errorTag: string): boolean =>
  ["PollTimeout", "TokenError", "InvalidApiKey", "PartnerNotFound", "MissingRequestId", "Unauthorized"].includes(
    errorTag
  )

/**
 * How many GETs in a row may end in `Unauthorized` (the client's one 401
 * recovery, a new token, refused too) before the quote ends with it:
 * credentials refused twice over are revoked, not expired.
 */
export const maxUnauthorizedInARow = 2

/** How many undecodable answers in a row end a quote, as a service that keeps answering garbage will not recover. */
export const maxUnexpectedInARow = 3

/** The attempts a failed call made (1 when it does not say: an error made without the client, as in a test). */
export const attemptsOf = (error: Errors.QuoteFailure): number =>
  "attempts" in error && typeof error.attempts === "number" && error.attempts > 0 ? error.attempts : 1

/** A transient token failure: no answer, 429 or 5xx from the token endpoint (`Errors.isTransient`). */
export const isTransientTokenError = (error: Errors.QuoteFailure): boolean =>
  error._tag === "TokenError" && Errors.isTransient(error)

/**
 * Whether a quote is polled again after its GET failed with `error`, given
 * how many GETs in a row ended in `Unauthorized` and in an undecodable answer
 * (this one included).
 */
export const isPollable = (
  error: Errors.QuoteFailure,
  inARow: { readonly unauthorized: number; readonly unexpected: number }
): boolean =>
  (Errors.isRetryable(error) && inARow.unauthorized < maxUnauthorizedInARow) ||
  isTransientTokenError(error) ||
  (error._tag === "UnexpectedResponse" && inARow.unexpected < maxUnexpectedInARow)
