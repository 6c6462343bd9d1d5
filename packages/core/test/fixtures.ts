/**
 * Shared fixtures of the core tests: sentinel secrets, sample wire payloads and
 * fast-check arbitraries that generate VALID WIRE JSON (canonical timestamps,
 * money with at most 2 decimals, optional fields present or absent).
 */
import { it } from "@effect/vitest"
import type { Errors } from "@gcx/core"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import { expect } from "vitest"

/** A card number that must never appear in full outside the wire. */
export const SENTINEL_CARD = "6006123456789012345"

/** A PIN that must never appear outside the wire. */
export const SENTINEL_PIN = "SENTINELPIN9431"

/** A value's JSON form, as it travels (drops `undefined`, turns `-0` into `0`). */
export const json = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

/** Sends a value through JSON text, as the wire does. */
export const overTheWire = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

/**
 * Decodes wire JSON, encodes it back and asserts the JSON is unchanged.
 * Returns the decoded value.
 */
export const expectRoundTrip = <S extends Schema.Codec<any, any>>(schema: S, wire: unknown): S["Type"] => {
  const decoded = Schema.decodeUnknownResult(schema)(overTheWire(wire))
  if (Result.isFailure(decoded)) {
    throw new Error(`expected ${JSON.stringify(wire)} to decode: ${decoded.failure.message}`)
  }
  const encoded = Schema.encodeSync(schema)(decoded.success)
  expect(json(encoded)).toEqual(json(wire))
  return decoded.success
}

/** The values that a record of arbitraries generates. */
export type Generated<Arbs extends Record<string, fc.Arbitrary<unknown>>> = {
  readonly [K in keyof Arbs]: Arbs[K] extends fc.Arbitrary<infer A> ? A : never
}

/**
 * A property test with fast-check: `body` runs for `numRuns` records drawn
 * from `arbitraries` (100 unless told), and a throw falsifies the property
 * and shrinks the record.
 */
export const prop = <const Arbs extends Record<string, fc.Arbitrary<unknown>>>(
  name: string,
  arbitraries: Arbs,
  body: (values: Generated<Arbs>) => void,
  parameters: fc.Parameters<[Generated<Arbs>]> = {}
): void =>
  it(name, () => {
    fc.assert(
      fc.property(fc.record(arbitraries) as unknown as fc.Arbitrary<Generated<Arbs>>, (values) => {
        body(values)
      }),
      parameters
    )
  })

/** The body of an Error as the service spells it. */
export const errorBody = (
  ErrorCode: string,
  Message?: string,
  UserMessage?: string,
  extra: Record<string, unknown> = {}
): string =>
  JSON.stringify({
    ErrorCode,
    ...(Message === undefined ? {} : { Message }),
    ...(UserMessage === undefined ? {} : { UserMessage }),
    ...extra
  })

/** A completed TransactionStatus as the GET returns it, with the request echoed. */
export const sampleStatus = {
  entityid: "ent-1",
  createrid: 1234,
  createdTimestamp: "2026-11-21T10:00:00.000Z",
  updatedTimespamp: "2026-11-21T10:00:03.250Z",
  steps: [
    {
      descriptionTag: "exchange.vault.credit.card",
      isCompleted: true,
      startTime: "2026-11-21T10:00:00.100Z",
      completionTime: "2026-11-21T10:00:01.000Z"
    },
    {
      descriptionTag: "exchange.svc.fraud.check",
      isCompleted: true,
      startTime: "2026-11-21T10:00:01.000Z",
      completionTime: "2026-11-21T10:00:03.000Z"
    }
  ],
  percentComplete: 100,
  completionTime: "2026-11-21T10:00:03.000Z",
  response: {
    transactionId: "1JXX657P9VCKN74WVFNBH75GWR",
    isCompleted: true,
    percentComplete: 100,
    actualCardValue: 25.5,
    exchangeCardValue: 21.68,
    responseTimestamp: "2026-11-21T10:00:03.250Z",
    expectedCompletionTime: 0
  },
  request: {
    card: { cardNumber: SENTINEL_CARD, pinNumber: SENTINEL_PIN, productLineId: "pl-amazing-store" }
  }
}

// --- Arbitraries of wire JSON ----------------------------------------------

/** A canonical wire timestamp: ISO 8601 UTC with milliseconds. */
export const timestampArb: fc.Arbitrary<string> = fc
  .integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) })
  .map((ms) => new Date(ms).toISOString())

/** Money as a JSON number with at most 2 decimals, in a sane range. */
export const moneyArb: fc.Arbitrary<number> = fc
  .integer({ min: 0, max: 100_000_000 })
  .map((cents) => cents / 100)

/** An integer percentage. */
export const percentArb: fc.Arbitrary<number> = fc.integer({ min: 0, max: 100 })

/** A finite JSON number of any kind, as the live service sends where the spec says integer. */
export const finiteNumberArb: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 })
)

/** A transaction id like the service's. */
export const transactionIdArb: fc.Arbitrary<string> = fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/)

export const cardWireArb = fc.record({
  cardNumber: fc.string({ minLength: 1, maxLength: 64 }),
  pinNumber: fc.string({ minLength: 1, maxLength: 64 }),
  productLineId: fc.string({ minLength: 1, maxLength: 64 })
})

export const quoteRequestWireArb = fc.record({ card: cardWireArb })

export const quoteResponseWireArb = fc.record({
  transactionId: transactionIdArb,
  isCompleted: fc.boolean(),
  percentComplete: percentArb,
  actualCardValue: moneyArb,
  exchangeCardValue: moneyArb,
  responseTimestamp: timestampArb,
  expectedCompletionTime: fc.nat({ max: 600_000 })
}, { requiredKeys: ["transactionId", "isCompleted"] })

export const stepWireArb = fc.record({
  descriptionTag: fc.oneof(
    fc.constantFrom("exchange.vault.credit.card", "exchange.svc.fraud.check"),
    fc.string()
  ),
  isCompleted: fc.boolean(),
  startTime: timestampArb,
  completionTime: timestampArb
}, { requiredKeys: ["descriptionTag", "isCompleted"] })

export const transactionStatusWireArb = fc.record({
  entityid: fc.string(),
  createrid: fc.integer({ min: 0, max: 2 ** 31 }),
  createdTimestamp: timestampArb,
  updatedTimespamp: timestampArb,
  steps: fc.array(stepWireArb, { maxLength: 4 }),
  percentComplete: percentArb,
  completionTime: timestampArb,
  response: quoteResponseWireArb,
  request: quoteRequestWireArb
}, { requiredKeys: ["response"] })

export const errorBodyWireArb = fc.record({
  ErrorCode: fc.oneof(fc.constantFrom("exchange.invalid.card", "Error", "Service Unavailable"), fc.string()),
  Message: fc.string(),
  UserMessage: fc.string(),
  MoreInfoUrl: fc.webUrl()
}, { requiredKeys: ["ErrorCode"] })

export const tokenResponseWireArb = fc.record({
  access_token: fc.string({ minLength: 1 }),
  expires_in: fc.integer({ min: 0, max: 86_400 }),
  token_type: fc.constant("Bearer")
})

export const oauthErrorBodyWireArb = fc.record({
  error: fc.constantFrom("invalid_client", "invalid_grant", "invalid_scope", "unauthorized_client"),
  error_description: fc.string()
}, { requiredKeys: ["error"] })

// --- Arbitraries of encoded errors and events --------------------------------

/** The tags of the errors that share `ServiceErrorFields` and nothing else. */
export const plainServiceErrorTags = [
  "InvalidCard",
  "CardValueOutOfRange",
  "CardNotAccepted",
  "OfferExpired",
  "MerchantUnavailable",
  "MissingRequestId",
  "InvalidApiKey",
  "PartnerNotFound",
  "TransactionNotFound",
  "InvalidRequest",
  "ServerError",
  "ServiceUnavailable",
  "RateLimited",
  "Unauthorized",
  "UnexpectedResponse",
  "UnknownServiceError"
] as const satisfies ReadonlyArray<Errors.QuoteFailure["_tag"]>

const serviceErrorFieldsArb = fc.record({
  message: fc.string(),
  errorCode: fc.string(),
  userMessage: fc.string(),
  moreInfoUrl: fc.webUrl(),
  httpStatus: fc.integer({ min: 100, max: 599 }),
  traceId: fc.uuid(),
  requestId: fc.stringMatching(/^[0-9a-f]{32}$/),
  transactionId: transactionIdArb,
  retryAfterMillis: fc.nat(),
  attempts: fc.nat({ max: 10 }),
  retryDelayMillis: fc.nat()
}, { requiredKeys: ["message"] })

/** The encoded form of any `QuoteFailure`: every one of the 20 error classes. */
export const quoteFailureWireArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.tuple(fc.constantFrom(...plainServiceErrorTags), serviceErrorFieldsArb).map(([_tag, fields]) => ({
    _tag,
    ...fields
  })),
  fc.tuple(serviceErrorFieldsArb, fc.constantFrom("Connect", "Reset", "Timeout", "Aborted", "Other")).map((
    [fields, reason]
  ) => ({ _tag: "TransportError", ...fields, reason })),
  fc.record({
    _tag: fc.constant("PollTimeout"),
    transactionId: transactionIdArb,
    deadlineMillis: fc.nat(),
    polls: fc.nat(),
    lastPercentComplete: percentArb
  }, { requiredKeys: ["_tag", "transactionId", "deadlineMillis", "polls"] }),
  fc.record({
    _tag: fc.constant("TokenError"),
    message: fc.string(),
    httpStatus: fc.integer({ min: 100, max: 599 }),
    oauthError: fc.string(),
    traceId: fc.uuid()
  }, { requiredKeys: ["_tag", "message"] }),
  fc.record({
    _tag: fc.constant("InvalidCardInput"),
    field: fc.constantFrom("card.cardNumber", "card.pinNumber", "card.productLineId"),
    reason: fc.string()
  }),
  fc.record({
    _tag: fc.constant("CardDecryptionError"),
    requestId: fc.string(),
    reason: fc.string(),
    keyId: fc.stringMatching(/^[0-9a-f]{8}$/)
  }, { requiredKeys: ["_tag", "requestId", "reason"] }),
  fc.record({ _tag: fc.constant("RequestIdConflict"), requestId: fc.string() })
)

const eventBase = { transactionId: transactionIdArb, timestamp: timestampArb }

export const submittedWireArb = fc.record({
  _tag: fc.constant("Submitted"),
  ...eventBase,
  requestId: fc.stringMatching(/^[0-9a-f]{32}$/),
  location: fc.webUrl(),
  traceId: fc.uuid(),
  card: fc.stringMatching(/^\*{4}\d{0,4}$/),
  productLineId: fc.string(),
  percentComplete: percentArb,
  expectedCompletionTime: fc.nat()
}, { requiredKeys: ["_tag", "transactionId", "timestamp", "requestId"] })

export const progressWireArb = fc.record({
  _tag: fc.constant("Progress"),
  ...eventBase,
  percentComplete: percentArb,
  steps: fc.array(stepWireArb, { maxLength: 4 }),
  expectedCompletionTime: fc.nat()
}, { requiredKeys: ["_tag", "transactionId", "timestamp", "percentComplete", "steps"] })

export const stepCompletedWireArb = fc.record({
  _tag: fc.constant("StepCompleted"),
  ...eventBase,
  descriptionTag: fc.string(),
  completionTime: timestampArb
}, { requiredKeys: ["_tag", "transactionId", "timestamp", "descriptionTag"] })

export const retryingWireArb = fc.record({
  _tag: fc.constant("Retrying"),
  ...eventBase,
  attempt: fc.integer({ min: 1, max: 20 }),
  delay: fc.nat({ max: 3_600_000 }),
  reason: fc.string()
})

export const completedWireArb = fc.record({
  _tag: fc.constant("Completed"),
  ...eventBase,
  quote: fc.record({
    transactionId: transactionIdArb,
    actualCardValue: moneyArb,
    exchangeCardValue: moneyArb,
    responseTimestamp: timestampArb
  }, { requiredKeys: ["transactionId", "actualCardValue", "exchangeCardValue"] })
})

export const failedWireArb = fc.record({
  _tag: fc.constant("Failed"),
  ...eventBase,
  error: quoteFailureWireArb
})

/** Any event, in its wire (JSON) form. */
export const quoteEventWireArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  submittedWireArb,
  progressWireArb,
  stepCompletedWireArb,
  retryingWireArb,
  completedWireArb,
  failedWireArb
)
