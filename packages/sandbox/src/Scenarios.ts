/**
 * What each card does: its balance or its refusal, and how long the check
 * takes. A scenario is settled into a `Plan` when the POST accepts the request,
 * so that every later read of the transaction is a pure function of time.
 */
import { ErrorBody } from "@gcx/core"
import * as BigDecimal from "effect/BigDecimal"
import * as Hash from "effect/Hash"
import type { Partner, ProductLine } from "./TestData.js"
import { Cards, rejectedPin } from "./TestData.js"

/** Why a check fails: the error code, a message for logs, and the two voices of the UserMessage. */
export interface Refusal {
  readonly errorCode: string
  readonly message: string
  /** The UserMessage as the merchant website gives it. */
  readonly merchantMessage: string
  /** The UserMessage as a person who tried the balance reports it (human-inquiry partners). */
  readonly agentMessage: string
}

/** What the merchant reports for a card: a fixed balance, a balance derived from the card number, or a refusal. */
export type Outcome =
  | { readonly _tag: "Balance"; readonly balance: BigDecimal.BigDecimal }
  | { readonly _tag: "Derived" }
  | { readonly _tag: "Refused"; readonly refusal: Refusal }

/** The behaviour of a card. */
export interface Scenario {
  readonly name: string
  /** How long the check takes at `timeScale` 1, in milliseconds. */
  readonly durationMillis: number
  readonly outcome: Outcome
}

const balance = (amount: string): Outcome => ({ _tag: "Balance", balance: BigDecimal.fromStringUnsafe(amount) })
const refused = (refusal: Refusal): Outcome => ({ _tag: "Refused", refusal })

const invalidCard: Refusal = {
  errorCode: ErrorBody.ErrorCodes.invalidCard,
  message: "The merchant did not accept the card number or PIN",
  merchantMessage: "The card number or PIN is not valid. Check both and try again.",
  agentMessage: "I called the merchant and they could not find a card with that number and PIN."
}

/** The fixed scenario cards, keyed by card number. */
export const byCard: Readonly<Record<string, Scenario>> = {
  [Cards.success]: { name: "success", durationMillis: 2_000, outcome: balance("100.00") },
  [Cards.instant]: { name: "instant", durationMillis: 0, outcome: balance("50.00") },
  [Cards.zeroBalance]: {
    name: "zeroBalance",
    durationMillis: 1_000,
    outcome: refused({
      errorCode: ErrorBody.ErrorCodes.cardValueOutOfRange,
      message: "The card balance is zero",
      merchantMessage: "This card has no remaining balance.",
      agentMessage: "I checked with the merchant: the card has no remaining balance."
    })
  },
  [Cards.invalid]: { name: "invalid", durationMillis: 1_000, outcome: refused(invalidCard) },
  [Cards.notAccepted]: {
    name: "notAccepted",
    durationMillis: 1_500,
    outcome: refused({
      errorCode: ErrorBody.ErrorCodes.cardNotAccepted,
      message: "The card is a merchandise return credit",
      merchantMessage: "This card is a merchandise return credit and can only be used at the store that issued it.",
      agentMessage: "The merchant told me this is a merchandise return credit, which they do not let us exchange."
    })
  },
  [Cards.merchantUnavailable]: {
    name: "merchantUnavailable",
    durationMillis: 1_500,
    outcome: refused({
      errorCode: ErrorBody.ErrorCodes.merchantUnavailable,
      message: "The merchant did not answer the balance inquiry",
      merchantMessage: "The merchant cannot be reached right now. Please try again later.",
      agentMessage: "I could not reach the merchant's balance line. Please try again later."
    })
  },
  [Cards.slow]: { name: "slow", durationMillis: 30_000, outcome: balance("250.00") }
}

/** The scenario of any card entered with the rejected PIN `0000`. */
export const rejectedPinScenario: Scenario = {
  name: "rejectedPin",
  durationMillis: 1_000,
  outcome: refused(invalidCard)
}

/** The scenario of any card that is not in the table: success with a derived balance after about 2 s. */
export const derivedScenario: Scenario = { name: "derived", durationMillis: 2_000, outcome: { _tag: "Derived" } }

/** The scenario a card plays: PIN `0000` always refuses; the fixed cards play their row; any other card succeeds. */
export const forCard = (cardNumber: string, pin: string): Scenario =>
  pin === rejectedPin ? rejectedPinScenario : byCard[cardNumber] ?? derivedScenario

const cents = (amount: BigDecimal.BigDecimal): bigint => BigDecimal.scale(amount, 2).value

/** The largest balance a derived card gets, in cents. */
const derivedCeilingCents = 50_000n

/**
 * The balance of a card outside the table: a hash of its number mapped into
 * the product line's accepted range (capped at 500.00). Deterministic.
 */
export const derivedBalance = (cardNumber: string, productLine: ProductLine): BigDecimal.BigDecimal => {
  const low = cents(productLine.min)
  const high = cents(productLine.max) < low + derivedCeilingCents ? cents(productLine.max) : low + derivedCeilingCents
  const offset = BigInt(Math.abs(Hash.string(cardNumber))) % (high - low + 1n)
  return BigDecimal.make(low + offset, 2)
}

/** exchangeCardValue: the balance times the product line's rate, rounded half-even to cents. */
export const exchangeValue = (balance: BigDecimal.BigDecimal, rate: BigDecimal.BigDecimal): BigDecimal.BigDecimal =>
  BigDecimal.round(BigDecimal.multiply(balance, rate), { scale: 2, mode: "half-even" })

/** What a transaction ends with: the quote, or the Error body that every GET answers with once it failed. */
export type Result =
  | {
    readonly _tag: "Quoted"
    readonly actualCardValue: BigDecimal.BigDecimal
    readonly exchangeCardValue: BigDecimal.BigDecimal
  }
  | { readonly _tag: "Refused"; readonly error: ErrorBody.ErrorBody }

/** A scenario settled for one request: its name, its scaled duration and its result. */
export interface Plan {
  readonly scenario: string
  /** The duration of the check after `timeScale`, in milliseconds. */
  readonly durationMillis: number
  readonly result: Result
}

/** An amount as the sandbox's messages show it: `$12.30` (BigDecimal.format drops trailing zeros). */
export const money = (amount: BigDecimal.BigDecimal): string => {
  const value = cents(amount)
  return `$${value / 100n}.${String(value % 100n).padStart(2, "0")}`
}

/** One row of the scenario table: the cards that play a scenario, what they end with, and how long they take. */
export interface Row {
  /** A card number, or which cards: `any, PIN 0000`, `any other`. */
  readonly cards: string
  readonly scenario: string
  /** What the check ends with: `completed, balance $100.00` or `failed, <error code>: <message>`. */
  readonly outcome: string
  /** How long the check takes at `timeScale` 1: `about 2 s`, or `at once` when the POST answers it completed. */
  readonly duration: string
}

const outcomeText = (outcome: Outcome): string => {
  switch (outcome._tag) {
    case "Balance":
      return `completed, balance ${money(outcome.balance)}`
    case "Derived":
      return "completed, a balance derived from the card number, in the product line's range " +
        `(at most ${money(BigDecimal.make(derivedCeilingCents, 2))} above its minimum)`
    case "Refused":
      return `failed, ${outcome.refusal.errorCode}: ${outcome.refusal.message}`
  }
}

const row = (cards: string, scenario: Scenario): Row => ({
  cards,
  scenario: scenario.name,
  outcome: outcomeText(scenario.outcome),
  duration: scenario.durationMillis === 0
    ? "at once (the POST answers completed)"
    : `about ${scenario.durationMillis / 1000} s`
})

/**
 * Every scenario, as people read it (the docs page's table): the fixed
 * cards, any card with PIN `0000`, and any other card. A balance outside the
 * product line's range fails with exchange.card.value.out.of.range instead.
 */
export const table: ReadonlyArray<Row> = [
  ...Object.entries(byCard).map(([card, scenario]) => row(card, scenario)),
  row(`any, PIN ${rejectedPin}`, rejectedPinScenario),
  row("any other", derivedScenario)
]

const outOfRange = (amount: BigDecimal.BigDecimal, productLine: ProductLine): Refusal => {
  const range = `${money(productLine.min)} to ${money(productLine.max)}`
  return {
    errorCode: ErrorBody.ErrorCodes.cardValueOutOfRange,
    message: `The card balance is outside the range product line ${productLine.id} accepts`,
    merchantMessage: `This card has a balance of ${
      money(amount)
    }; ${productLine.name} cards are accepted from ${range}.`,
    agentMessage: `The card holds ${money(amount)}, and we can only exchange ${productLine.name} cards from ${range}.`
  }
}

const refusalError = (refusal: Refusal, partner: Partner): ErrorBody.ErrorBody =>
  new ErrorBody.ErrorBody({
    ErrorCode: refusal.errorCode,
    Message: refusal.message,
    UserMessage: partner.agent === undefined
      ? refusal.merchantMessage
      : `${partner.agent.name}: ${refusal.agentMessage}`
  })

/**
 * Settles the scenario of a card for one request: the balance must lie within
 * the product line's accepted range (else exchange.card.value.out.of.range),
 * and a human-inquiry partner's refusals carry its agent's UserMessage.
 */
export const plan = (options: {
  readonly cardNumber: string
  readonly pin: string
  readonly productLine: ProductLine
  readonly partner: Partner
  readonly timeScale: number
}): Plan => {
  const scenario = forCard(options.cardNumber, options.pin)
  const durationMillis = Math.round(scenario.durationMillis * options.timeScale)
  const settle = (result: Result): Plan => ({ scenario: scenario.name, durationMillis, result })
  const refuse = (refusal: Refusal) => settle({ _tag: "Refused", error: refusalError(refusal, options.partner) })
  if (scenario.outcome._tag === "Refused") return refuse(scenario.outcome.refusal)
  const actual = scenario.outcome._tag === "Balance"
    ? scenario.outcome.balance
    : derivedBalance(options.cardNumber, options.productLine)
  if (!BigDecimal.between(actual, { minimum: options.productLine.min, maximum: options.productLine.max })) {
    return refuse(outOfRange(actual, options.productLine))
  }
  return settle({
    _tag: "Quoted",
    actualCardValue: actual,
    exchangeCardValue: exchangeValue(actual, options.productLine.rate)
  })
}
