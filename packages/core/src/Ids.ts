/**
 * Identifiers: the client-chosen `requestId` (the idempotency key of
 * service-notes.md) and the service's transaction ids.
 */
import * as Schema from "effect/Schema"

/** A run of 8 or more digits, with its 8th digit apart. */
const digitRun = /(\d{7})(\d)/g

/**
 * A fresh requestId: a random UUID written as 32 lowercase hex characters, as
 * the service documents it. Every 8th digit in a row becomes a letter (a-f),
 * so that the id holds no run of 8 digits: a service that uses it as its
 * SVC-TRACE-ID has that kept (`Redaction.traceId`), and no card-number masking
 * hides part of it. About a quarter of random ids would hold such a run.
 */
export const makeRequestId = (): string => breakDigitRuns(globalThis.crypto.randomUUID().replaceAll("-", ""))

/**
 * `hex` with every 8th digit in a row made a letter (a-f), as `makeRequestId`
 * does: for requestIds derived from other data (the gateway's).
 */
export const breakDigitRuns = (hex: string): string =>
  hex.replace(digitRun, (_, seven: string, eighth: string) => `${seven}${"abcdef"[Number(eighth) % 6]}`)

/** The characters of a transaction id (Crockford-style upper-case base 32). */
export const TRANSACTION_ID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

/** A fresh transaction id: 26 upper-case base-32 characters, like `1JXX657P9VCKN74WVFNBH75GWR`. */
export const makeTransactionId = (): string => {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(26))
  let out = ""
  for (const byte of bytes) out += TRANSACTION_ID_ALPHABET[byte & 31]
  return out
}

/** What a `RequestId` is made of, as the messages that refuse one say it. */
export const requestIdRule = "1 to 64 letters, digits, '-' or '_'"

/**
 * A requestId as a caller may supply it: 1 to 64 letters, digits, `-` and `_`
 * (an order id, a UUID with or without its hyphens): safe in an HTTP header,
 * and within what the service takes, so that a requestId it would refuse is
 * refused before any I/O.
 */
export const RequestId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_-]{1,64}$/, { message: `requestId must be ${requestIdRule}` })
)

/**
 * A requestId as gcx may have recorded it: 1 to 64 visible ASCII characters,
 * what earlier versions took from callers. For reading stored quotes only;
 * new ones are `RequestId`s.
 */
export const StoredRequestId = Schema.String.check(
  Schema.isPattern(/^[\x21-\x7e]{1,64}$/, {
    message: "a stored requestId must be 1 to 64 visible ASCII characters"
  })
)

/**
 * A transaction id as the SDK accepts it from a caller: 1 to 128 characters of
 * letters, digits, `-` and `_`, so that it is safe in a URL path.
 */
export const TransactionId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_-]{1,128}$/, {
    message: "transactionId must be 1 to 128 letters, digits, '-' or '_'"
  })
)
