/**
 * What a caller gives a call, checked before any I/O: the transactionId that
 * goes into a URL, the requestId and previousAttempts that go into headers,
 * and the card that goes into the POST's body.
 */
import * as Card from "@gcx/core/Card"
import * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import type * as Quote from "@gcx/core/Quote"
import * as HttpBody from "effect/http/HttpBody"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** A caller-given value refused before any I/O. */
const invalidInput = (message: string) => new Errors.InvalidRequest({ message })

const isTransactionId = Schema.is(Ids.TransactionId)
const isRequestId = Schema.is(Ids.RequestId)

/** A caller-given transactionId, checked before it goes into a URL. */
export const checkTransactionId = (transactionId: string): Result.Result<string, Errors.InvalidRequest> =>
  isTransactionId(transactionId)
    ? Result.succeed(transactionId)
    : Result.fail(invalidInput("transactionId must be 1 to 128 letters, digits, '-' or '_'"))

/** The caller's previousAttempts, checked; 0 by default. */
export const resolvePreviousAttempts = (
  previousAttempts: number | undefined
): Result.Result<number, Errors.InvalidRequest> =>
  previousAttempts === undefined
    ? Result.succeed(0)
    : Number.isSafeInteger(previousAttempts) && previousAttempts >= 0
    ? Result.succeed(previousAttempts)
    : Result.fail(invalidInput("previousAttempts must be a non-negative integer"))

/** The caller's requestId, checked, or a fresh one. */
export const resolveRequestId = (requestId: string | undefined): Result.Result<string, Errors.InvalidRequest> =>
  requestId === undefined
    ? Result.succeed(Ids.makeRequestId())
    : isRequestId(requestId)
    ? Result.succeed(requestId)
    : Result.fail(invalidInput(`requestId must be ${Ids.requestIdRule}`))

/** The card of a `createQuote` input (a `QuoteRequest` or the card itself), validated. */
export const cardOf = (input: Quote.QuoteRequest | Card.CardInput): Result.Result<Card.Card, Errors.InvalidCardInput> =>
  Card.validateResult(typeof input === "object" && input !== null && "card" in input ? input.card : input)

/**
 * The wire body of a quote request. Sent with `application/json;
 * charset=utf-8`, which Effect's request inspection prints as `Uint8Array(n)`,
 * never as text, so the card cannot leak through a logged request.
 */
export const quoteBody = (card: Card.Card): HttpBody.HttpBody => {
  const wire: typeof Quote.QuoteRequest.Encoded = {
    card: {
      cardNumber: Redacted.value(card.cardNumber),
      pinNumber: Redacted.value(card.pinNumber),
      productLineId: card.productLineId
    }
  }
  return HttpBody.text(JSON.stringify(wire), "application/json; charset=utf-8")
}
