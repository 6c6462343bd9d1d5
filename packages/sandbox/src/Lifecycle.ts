/**
 * The life of a transaction as a pure function of time: the vault step runs
 * the first 40% of the plan's duration, the fraud check the rest. Every view
 * (the quote, the transaction status, the admin summary) is computed from the
 * stored transaction and a time read from `Clock`; nothing runs on timers.
 */
import type { ErrorBody } from "@gcx/core"
import { Card, Quote, Transaction as Status, Wire } from "@gcx/core"
import * as DateTime from "effect/DateTime"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Transaction } from "./Store.js"

/** The share of the duration that the vault step takes. */
export const vaultShare = 0.4

/** Where a transaction stands at some time. Times are epoch milliseconds. */
export interface Progress {
  readonly isCompleted: boolean
  /** 0 to 99 while running, 100 once done. */
  readonly percentComplete: number
  /** Seconds until completion, to the millisecond (e.g. 1.234); 0 once done. */
  readonly expectedCompletionTime: number
  readonly vaultCompletedAt: number
  readonly completedAt: number
}

/** Where the transaction stands at `now`. */
export const progressAt = (transaction: Transaction, now: number): Progress => {
  const { durationMillis } = transaction.plan
  const completedAt = transaction.createdAt + durationMillis
  const vaultCompletedAt = transaction.createdAt + Math.round(durationMillis * vaultShare)
  const elapsed = now - transaction.createdAt
  const isCompleted = now >= completedAt
  return {
    isCompleted,
    percentComplete: isCompleted ? 100 : Math.min(99, Math.max(0, Math.floor((100 * elapsed) / durationMillis))),
    expectedCompletionTime: isCompleted ? 0 : Math.max(0, completedAt - now) / 1000,
    vaultCompletedAt,
    completedAt
  }
}

/** The views are built from values the sandbox checked already: their constructors skip the checks. */
const checked = { disableChecks: true } as const

const timestamp = (millis: number): DateTime.Utc => DateTime.makeUnsafe(millis)

/**
 * The QuoteResponse at `now`. The card values are present only once the check
 * succeeded; a refused check never reports `isCompleted` true.
 */
export const quoteAt = (transaction: Transaction, now: number): Quote.QuoteResponse => {
  const progress = progressAt(transaction, now)
  const { result } = transaction.plan
  const quoted = progress.isCompleted && result._tag === "Quoted"
  return new Quote.QuoteResponse({
    transactionId: transaction.id,
    isCompleted: quoted,
    percentComplete: progress.percentComplete,
    expectedCompletionTime: progress.expectedCompletionTime,
    responseTimestamp: timestamp(now),
    ...(quoted ? { actualCardValue: result.actualCardValue, exchangeCardValue: result.exchangeCardValue } : {})
  }, checked)
}

const step = (descriptionTag: string, startedAt: number, completedAt: number, now: number): Status.Step =>
  new Status.Step({
    descriptionTag,
    isCompleted: now >= completedAt,
    ...(now >= startedAt ? { startTime: timestamp(startedAt) } : {}),
    ...(now >= completedAt ? { completionTime: timestamp(completedAt) } : {})
  }, checked)

/** The original request as the status echoes it: the card number masked, the PIN hidden. */
const echoedRequest = (transaction: Transaction): Quote.QuoteRequest =>
  new Quote.QuoteRequest({
    card: new Card.Card({
      cardNumber: Redacted.make(transaction.maskedCardNumber),
      pinNumber: Redacted.make("****"),
      productLineId: transaction.productLineId
    }, checked)
  }, checked)

/**
 * The TransactionStatus (spec 2.3) at `now`, or, once a refused check is done,
 * the Error body that every GET answers with from then on.
 */
export const statusAt = (
  transaction: Transaction,
  now: number
): Result.Result<Status.TransactionStatus, ErrorBody.ErrorBody> => {
  const progress = progressAt(transaction, now)
  const { result } = transaction.plan
  if (progress.isCompleted && result._tag === "Refused") return Result.fail(result.error)
  return Result.succeed(
    new Status.TransactionStatus({
      entityid: transaction.id,
      createrid: transaction.creatorId,
      createdTimestamp: timestamp(transaction.createdAt),
      updatedTimespamp: timestamp(progress.isCompleted ? progress.completedAt : now),
      steps: [
        step(Status.StepTags.vaultCreditCard, transaction.createdAt, progress.vaultCompletedAt, now),
        step(Status.StepTags.fraudCheck, progress.vaultCompletedAt, progress.completedAt, now)
      ],
      percentComplete: progress.percentComplete,
      ...(progress.isCompleted ? { completionTime: timestamp(progress.completedAt) } : {}),
      response: quoteAt(transaction, now),
      request: echoedRequest(transaction)
    }, checked)
  )
}

/** The two steps of the transaction at `now`, as its status shows them. */
export const stepsAt = (transaction: Transaction, now: number): ReadonlyArray<Status.Step> => {
  const progress = progressAt(transaction, now)
  return [
    step(Status.StepTags.vaultCreditCard, transaction.createdAt, progress.vaultCompletedAt, now),
    step(Status.StepTags.fraudCheck, progress.vaultCompletedAt, progress.completedAt, now)
  ]
}

/** A transaction as the admin API lists it. */
export const Summary = Schema.Struct({
  transactionId: Schema.String,
  clientId: Schema.String,
  requestId: Schema.String,
  previousAttempts: Schema.Int,
  productLineId: Schema.String,
  /** The card number masked to its last 4 digits. */
  cardNumber: Schema.String,
  scenario: Schema.String,
  state: Schema.Literals(["pending", "completed", "failed"]),
  percentComplete: Schema.Int,
  createdTimestamp: Wire.Timestamp,
  completionTime: Schema.optionalKey(Wire.Timestamp),
  errorCode: Schema.optionalKey(Schema.String),
  actualCardValue: Schema.optionalKey(Wire.Money),
  exchangeCardValue: Schema.optionalKey(Wire.Money)
}).annotate({ identifier: "TransactionSummary" })

/** A transaction as the admin API lists it. */
export type Summary = typeof Summary.Type

/** The admin summary of the transaction at `now`. */
export const summaryAt = (transaction: Transaction, now: number): Summary => {
  const progress = progressAt(transaction, now)
  const { result } = transaction.plan
  const base = {
    transactionId: transaction.id,
    clientId: transaction.clientId,
    requestId: transaction.requestId,
    previousAttempts: transaction.previousAttempts,
    productLineId: transaction.productLineId,
    cardNumber: transaction.maskedCardNumber,
    scenario: transaction.plan.scenario,
    percentComplete: progress.percentComplete,
    createdTimestamp: timestamp(transaction.createdAt)
  }
  if (!progress.isCompleted) return { ...base, state: "pending" }
  const completionTime = timestamp(progress.completedAt)
  return result._tag === "Quoted"
    ? {
      ...base,
      state: "completed",
      completionTime,
      actualCardValue: result.actualCardValue,
      exchangeCardValue: result.exchangeCardValue
    }
    : { ...base, state: "failed", completionTime, errorCode: result.error.ErrorCode }
}
