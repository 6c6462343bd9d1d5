import { describe, expect, it } from "@effect/vitest"
import { ErrorBody, Errors } from "@gcx/core"
import { Duration, Effect, Option } from "effect"
import { errorBody } from "./fixtures.js"

type Tag = Errors.QuoteFailure["_tag"]

interface Traits {
  readonly group: Errors.ErrorGroup
  readonly transient: boolean
  readonly retryable: boolean
  readonly customerFacing: boolean
}

const card: Traits = { group: "card", transient: false, retryable: false, customerFacing: true }
const request: Traits = { group: "request", transient: false, retryable: false, customerFacing: false }
const service: Traits = { group: "service", transient: true, retryable: true, customerFacing: false }

/** What ARCHITECTURE.md ("Errors", "Retries") and the spec say about each error. */
const expectedTraits: Record<Tag, Traits> = {
  // card outcome: show userMessage to the customer; do not retry
  InvalidCard: card,
  CardValueOutOfRange: card,
  CardNotAccepted: card,
  OfferExpired: card,
  // merchant outcome: transient, with an unknown recovery time; the customer decides to retry
  MerchantUnavailable: { group: "merchant", transient: true, retryable: false, customerFacing: true },
  // request and partner: configuration or programming faults
  MissingRequestId: request,
  InvalidApiKey: request,
  PartnerNotFound: request,
  TransactionNotFound: request,
  InvalidRequest: request,
  // service: transient, retried by the SDK within a budget
  ServerError: service,
  ServiceUnavailable: service,
  RateLimited: service,
  Unauthorized: service,
  // transport and shape
  TransportError: { group: "transport", transient: true, retryable: true, customerFacing: false },
  UnexpectedResponse: { group: "transport", transient: false, retryable: false, customerFacing: false },
  // catch-all
  // spec 2.4: every UserMessage is meant for the customer or agent, so an unknown code's is shown too
  UnknownServiceError: { group: "unknown", transient: false, retryable: false, customerFacing: true },
  // local
  PollTimeout: { group: "local", transient: true, retryable: false, customerFacing: false },
  TokenError: { group: "local", transient: false, retryable: false, customerFacing: false },
  InvalidCardInput: { group: "local", transient: false, retryable: false, customerFacing: false },
  // a sealed card no data key here opens: a local fault of configuration, never the service's
  CardDecryptionError: { group: "local", transient: false, retryable: false, customerFacing: false },
  RequestIdConflict: { group: "request", transient: false, retryable: false, customerFacing: false }
}

const expectTraits = (error: Errors.QuoteFailure, tag: Tag) => {
  const traits = expectedTraits[tag]
  expect(Errors.groupOf(error)).toBe(traits.group)
  expect(Errors.isTransient(error)).toBe(traits.transient)
  expect(Errors.isRetryable(error)).toBe(traits.retryable)
  expect(Errors.isCustomerFacing(error)).toBe(traits.customerFacing)
}

interface Row {
  readonly name: string
  readonly status: number
  readonly body: string
  readonly headers?: Record<string, string | ReadonlyArray<string>>
  readonly now?: number
  readonly tag: Tag
  readonly errorCode: string | undefined
  readonly message: string
  readonly userMessage: string | undefined
  readonly moreInfoUrl?: string
  readonly retryAfterMillis?: number
}

const html = "<html><head><title>503 Service Temporarily Unavailable</title></head><body>nginx</body></html>"

/** A documented code, answered with a full Error body. */
const documented = (status: number, code: string, tag: Tag, source: string): Row => ({
  name: `${source}: ${status} ${code} -> ${tag}`,
  status,
  body: errorBody(code, `log: ${code}`, `customer: ${code}`),
  tag,
  errorCode: code,
  message: `log: ${code}`,
  userMessage: `customer: ${code}`
})

const rows: ReadonlyArray<Row> = [
  // interface-spec.md section 7
  documented(400, "exchange.card.value.out.of.range", "CardValueOutOfRange", "spec"),
  documented(400, "exchange.invalid.card", "InvalidCard", "spec"),
  documented(400, "exchange.card.not.accepted", "CardNotAccepted", "spec"),
  documented(400, "exchange.card.merchant.unavailable", "MerchantUnavailable", "spec"),
  documented(400, "request.missing.parameter.requestId", "MissingRequestId", "spec"),
  documented(400, "exchange.partner.not.found", "PartnerNotFound", "spec"),
  documented(500, "Error", "ServerError", "spec"),
  documented(503, "Service Unavailable", "ServiceUnavailable", "spec"),
  {
    name: "spec: 503 with an HTML body -> ServiceUnavailable",
    status: 503,
    body: html,
    tag: "ServiceUnavailable",
    errorCode: undefined,
    message: "HTTP 503",
    userMessage: undefined
  },
  {
    name: "spec: 503 with an empty body -> ServiceUnavailable",
    status: 503,
    body: "",
    tag: "ServiceUnavailable",
    errorCode: undefined,
    message: "HTTP 503",
    userMessage: undefined
  },
  {
    name: "spec: 503 with a plain-text body -> ServiceUnavailable",
    status: 503,
    body: "Service Unavailable",
    tag: "ServiceUnavailable",
    errorCode: undefined,
    message: "HTTP 503",
    userMessage: undefined
  },
  {
    name: "spec: 503 with a non-Error JSON body -> ServiceUnavailable",
    status: 503,
    body: JSON.stringify({ message: "Service Unavailable" }),
    tag: "ServiceUnavailable",
    errorCode: undefined,
    message: "HTTP 503",
    userMessage: undefined
  },
  // service-notes.md, "More error codes seen on the live service"
  documented(400, "exchange.invalid.x-api-key", "InvalidApiKey", "notes"),
  documented(400, "exchange.card.is.unacceptable", "CardNotAccepted", "notes"),
  documented(400, "exchange.requestId.header.required", "MissingRequestId", "notes"),
  documented(404, "exchange.transaction.not.found", "TransactionNotFound", "notes"),
  documented(404, "exchange.partner.not.found", "PartnerNotFound", "notes"),
  documented(409, "exchange.offer.code.expired", "OfferExpired", "notes"),
  documented(500, "exchange.error.heartbeat", "ServerError", "notes"),
  {
    name: "notes: MoreInfoUrl is kept",
    status: 400,
    body: errorBody("exchange.invalid.card", "m", "u", { MoreInfoUrl: "https://partner.example/errors/invalid-card" }),
    tag: "InvalidCard",
    errorCode: "exchange.invalid.card",
    message: "m",
    userMessage: "u",
    moreInfoUrl: "https://partner.example/errors/invalid-card"
  },
  // unknown codes keep code, messages and status
  ...[400, 409, 422].map((status): Row => ({
    name: `unknown exchange.* code at ${status} -> UnknownServiceError`,
    status,
    body: errorBody("exchange.card.region.blocked", "region blocked", "This card cannot be used in your region"),
    tag: "UnknownServiceError",
    errorCode: "exchange.card.region.blocked",
    message: "region blocked",
    userMessage: "This card cannot be used in your region"
  })),
  // by status
  {
    name: "401 without a body -> Unauthorized",
    status: 401,
    body: "",
    tag: "Unauthorized",
    errorCode: undefined,
    message: "HTTP 401",
    userMessage: undefined
  },
  {
    name: "401 with a gateway JSON body -> Unauthorized",
    status: 401,
    body: JSON.stringify({ message: "Unauthorized" }),
    tag: "Unauthorized",
    errorCode: undefined,
    message: "HTTP 401",
    userMessage: undefined
  },
  {
    name: "401 with an unknown Error code -> Unauthorized keeping the code",
    status: 401,
    body: errorBody("exchange.token.expired", "token expired"),
    tag: "Unauthorized",
    errorCode: "exchange.token.expired",
    message: "token expired",
    userMessage: undefined
  },
  {
    name: "429 with Retry-After in seconds -> RateLimited",
    status: 429,
    body: JSON.stringify({ message: "Too Many Requests" }),
    headers: { "Retry-After": "7" },
    tag: "RateLimited",
    errorCode: undefined,
    message: "HTTP 429",
    userMessage: undefined,
    retryAfterMillis: 7000
  },
  {
    name: "429 with Retry-After as an HTTP date -> RateLimited",
    status: 429,
    body: "",
    headers: { "retry-after": "Wed, 21 Oct 2015 07:28:30 GMT" },
    now: Date.parse("2015-10-21T07:28:00.000Z"),
    tag: "RateLimited",
    errorCode: undefined,
    message: "HTTP 429",
    userMessage: undefined,
    retryAfterMillis: 30_000
  },
  {
    name: "502 with an HTML body -> ServiceUnavailable",
    status: 502,
    body: html,
    tag: "ServiceUnavailable",
    errorCode: undefined,
    message: "HTTP 502",
    userMessage: undefined
  },
  {
    name: "504 with an empty body -> ServiceUnavailable",
    status: 504,
    body: "",
    tag: "ServiceUnavailable",
    errorCode: undefined,
    message: "HTTP 504",
    userMessage: undefined
  },
  {
    name: "500 with a non-JSON body -> ServerError",
    status: 500,
    body: "Internal Server Error",
    tag: "ServerError",
    errorCode: undefined,
    message: "HTTP 500",
    userMessage: undefined
  },
  {
    name: "503 with Retry-After -> ServiceUnavailable with the delay",
    status: 503,
    body: "",
    headers: { "RETRY-AFTER": "120" },
    tag: "ServiceUnavailable",
    errorCode: undefined,
    message: "HTTP 503",
    userMessage: undefined,
    retryAfterMillis: 120_000
  },
  // shape
  {
    name: "400 with a non-Error JSON body -> UnexpectedResponse",
    status: 400,
    body: JSON.stringify({ status: "bad", detail: "nope" }),
    tag: "UnexpectedResponse",
    errorCode: undefined,
    message: "HTTP 400 without an Error body: ErrorCode is missing",
    userMessage: undefined
  },
  {
    name: "404 with an HTML body -> UnexpectedResponse",
    status: 404,
    body: "<html>Not Found</html>",
    tag: "UnexpectedResponse",
    errorCode: undefined,
    message: "HTTP 404 without an Error body: the body is not JSON",
    userMessage: undefined
  },
  {
    name: "409 with an ErrorCode that is not a string -> UnexpectedResponse",
    status: 409,
    body: JSON.stringify({ ErrorCode: 17, Message: "m" }),
    tag: "UnexpectedResponse",
    errorCode: undefined,
    message: "HTTP 409 without an Error body: ErrorCode is not a string",
    userMessage: undefined
  },
  // tolerant reader: alias spellings
  {
    name: "lowercase alias fields (errorCode, message, userMessage) are accepted",
    status: 400,
    body: JSON.stringify({ errorCode: "exchange.invalid.card", message: "m", userMessage: "u" }),
    tag: "InvalidCard",
    errorCode: "exchange.invalid.card",
    message: "m",
    userMessage: "u"
  },
  {
    name: "snake_case alias fields are accepted",
    status: 404,
    body: JSON.stringify({
      error_code: "exchange.transaction.not.found",
      user_message: "u",
      more_info_url: "https://x"
    }),
    tag: "TransactionNotFound",
    errorCode: "exchange.transaction.not.found",
    message: "exchange.transaction.not.found (HTTP 404)",
    userMessage: "u",
    moreInfoUrl: "https://x"
  },
  {
    name: "an Error body without Message gets a message naming code and status",
    status: 400,
    body: errorBody("exchange.card.not.accepted", undefined, "Merchandise return credits are not accepted"),
    tag: "CardNotAccepted",
    errorCode: "exchange.card.not.accepted",
    message: "exchange.card.not.accepted (HTTP 400)",
    userMessage: "Merchandise return credits are not accepted"
  },
  {
    name: "null optional fields of an Error body are absent",
    status: 400,
    body: JSON.stringify({ ErrorCode: "exchange.invalid.card", Message: "m", UserMessage: null, MoreInfoUrl: null }),
    tag: "InvalidCard",
    errorCode: "exchange.invalid.card",
    message: "m",
    userMessage: undefined
  },
  {
    name: "an Error code named like an Object.prototype member is an unknown code",
    status: 400,
    body: errorBody("toString", "m", "u"),
    tag: "UnknownServiceError",
    errorCode: "toString",
    message: "m",
    userMessage: "u"
  }
]

const traceHeaderSpellings = ["SVC-TRACE-ID", "svc-trace-id", "Svc-Trace-Id", "sVc-TrAcE-iD"]

describe("Errors.fromResponse", () => {
  describe("maps every documented answer to its class (table)", () => {
    rows.forEach((row, index) => {
      it(row.name, () => {
        const traceId = `trace-${index}`
        const headerName = traceHeaderSpellings[index % traceHeaderSpellings.length]!
        const error = Errors.fromResponse({
          status: row.status,
          headers: { "content-type": "application/json", [headerName]: traceId, ...row.headers },
          body: row.body,
          requestId: "0123456789abcdef0123456789abcdef",
          transactionId: "1JXX657P9VCKN74WVFNBH75GWR",
          now: row.now
        })
        expect(error._tag).toBe(row.tag)
        expect(error).toBeInstanceOf(Error)
        expect(error.httpStatus).toBe(row.status)
        expect(error.errorCode).toBe(row.errorCode)
        expect(error.message).toBe(row.message)
        expect(error.userMessage).toBe(row.userMessage)
        expect(error.traceId).toBe(traceId)
        expect(error.requestId).toBe("0123456789abcdef0123456789abcdef")
        expect(error.transactionId).toBe("1JXX657P9VCKN74WVFNBH75GWR")
        expect(error.moreInfoUrl).toBe(row.moreInfoUrl)
        expect(error.retryAfterMillis).toBe(row.retryAfterMillis)
        expectTraits(error, row.tag)
      })
    })
  })

  it("both not-accepted spellings map to CardNotAccepted", () => {
    for (const code of [ErrorBody.ErrorCodes.cardNotAccepted, ErrorBody.ErrorCodes.cardIsUnacceptable]) {
      const error = Errors.fromResponse({ status: 400, headers: {}, body: errorBody(code, "m", "u") })
      expect(error).toBeInstanceOf(Errors.CardNotAccepted)
      expect(error.errorCode).toBe(code)
    }
  })

  it("both requestId spellings map to MissingRequestId", () => {
    for (const code of ["request.missing.parameter.requestId", "exchange.requestId.header.required"]) {
      expect(Errors.fromResponse({ status: 400, headers: {}, body: errorBody(code) })).toBeInstanceOf(
        Errors.MissingRequestId
      )
    }
  })

  it("a documented code wins over the status", () => {
    const error = Errors.fromResponse({ status: 503, headers: {}, body: errorBody("exchange.invalid.card", "m") })
    expect(error._tag).toBe("InvalidCard")
    expect(error.httpStatus).toBe(503)
  })

  it("the trace id is absent without the header and the first value of a repeated header is used", () => {
    expect(Errors.fromResponse({ status: 500, headers: {}, body: "" }).traceId).toBeUndefined()
    const repeated = Errors.fromResponse({ status: 500, headers: { "svc-trace-id": ["first", "second"] }, body: "" })
    expect(repeated.traceId).toBe("first")
  })

  it("canonical fields win over their aliases, and a null canonical field gives way to an alias", () => {
    const both = Errors.fromResponse({
      status: 400,
      headers: {},
      body: JSON.stringify({ ErrorCode: "exchange.invalid.card", errorCode: "exchange.card.not.accepted" })
    })
    expect(both._tag).toBe("InvalidCard")
    const nullCanonical = Errors.fromResponse({
      status: 400,
      headers: {},
      body: JSON.stringify({ ErrorCode: null, errorCode: "exchange.invalid.card", Message: null, message: "m" })
    })
    expect(nullCanonical._tag).toBe("InvalidCard")
    expect(nullCanonical.message).toBe("m")
  })

  it("every code of ErrorBody.ErrorCodes maps to a class", () => {
    const expected: Record<keyof typeof ErrorBody.ErrorCodes, Tag> = {
      cardValueOutOfRange: "CardValueOutOfRange",
      invalidCard: "InvalidCard",
      cardNotAccepted: "CardNotAccepted",
      cardIsUnacceptable: "CardNotAccepted",
      merchantUnavailable: "MerchantUnavailable",
      offerCodeExpired: "OfferExpired",
      missingRequestId: "MissingRequestId",
      requestIdHeaderRequired: "MissingRequestId",
      partnerNotFound: "PartnerNotFound",
      invalidApiKey: "InvalidApiKey",
      transactionNotFound: "TransactionNotFound",
      heartbeatFailed: "ServerError",
      invalidProductLine: "InvalidRequest",
      invalidParameter: "InvalidRequest",
      invalidBody: "InvalidRequest",
      bodyTooLarge: "InvalidRequest",
      duplicateRequest: "InvalidRequest",
      unauthorized: "Unauthorized",
      serverError: "ServerError",
      serviceUnavailable: "ServiceUnavailable",
      routeNotFound: "UnknownServiceError"
    }
    const statusFor = (code: string) => code === "Error" ? 500 : code === "Service Unavailable" ? 503 : 400
    for (const [key, code] of Object.entries(ErrorBody.ErrorCodes)) {
      const error = Errors.fromResponse({ status: statusFor(code), headers: {}, body: errorBody(code, "m", "u") })
      expect(error._tag, code).toBe(expected[key as keyof typeof ErrorBody.ErrorCodes])
      expect(error.errorCode).toBe(code)
    }
  })
})

describe("Errors.fromResponse and the service's text", () => {
  const card = "6006123456789012345"

  it("drops a trace id that echoes a card number, is too long or has other characters", () => {
    for (const traceId of [card, `trace-${card}`, "t".repeat(15_000), "trace id", "trace\u001b[2J"]) {
      const error = Errors.fromResponse({
        status: 400,
        headers: { "svc-trace-id": traceId },
        body: errorBody("exchange.invalid.card", "m")
      })
      expect(error.traceId).toBeUndefined()
    }
    const kept = Errors.fromResponse({ status: 500, headers: { "svc-trace-id": "0af7651916cd43dd" }, body: "" })
    expect(kept.traceId).toBe("0af7651916cd43dd")
  })

  it("masks and cuts every text of the body to 1,024 characters, unknown codes included", () => {
    const huge = `${card} ${"x".repeat(900_000)}`
    for (const code of ["exchange.invalid.card", `exchange.new.${huge}`]) {
      const error = Errors.fromResponse({
        status: 400,
        headers: {},
        body: errorBody(code, huge, huge, { MoreInfoUrl: `https://example.test/${huge}` })
      })
      for (const text of [error.errorCode, error.message, error.userMessage, error.moreInfoUrl]) {
        expect(text).toBeDefined()
        expect(text!.length).toBeLessThanOrEqual(1024)
        expect(text).not.toContain(card)
      }
      for (const text of [error.message, error.userMessage, error.moreInfoUrl]) expect(text).toContain("****2345")
      expect(error.message).toMatch(/… \(cut from 900,020 characters\)$/)
    }
    const unknown = Errors.fromResponse({ status: 409, headers: {}, body: errorBody(`exchange.${huge}`) })
    expect(unknown._tag).toBe("UnknownServiceError")
    expect(unknown.errorCode!.length).toBeLessThanOrEqual(1024)
    expect(unknown.message.length).toBeLessThanOrEqual(1024)
    expect(unknown.message).not.toContain(card)
  })
})

describe("Errors.classForCode", () => {
  it("knows the documented codes and no others", () => {
    expect(Errors.classForCode("exchange.invalid.card")).toBe(Errors.InvalidCard)
    expect(Errors.classForCode("exchange.card.is.unacceptable")).toBe(Errors.CardNotAccepted)
    expect(Errors.classForCode("exchange.card.region.blocked")).toBeUndefined()
    expect(Errors.classForCode("")).toBeUndefined()
  })

  it("does not mistake Object.prototype members for codes", () => {
    for (const code of ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf", "isPrototypeOf"]) {
      expect(Errors.classForCode(code), code).toBeUndefined()
      const error = Errors.fromResponse({ status: 400, headers: {}, body: errorBody(code, "m") })
      expect(error._tag, code).toBe("UnknownServiceError")
      expect(error.errorCode).toBe(code)
    }
  })
})

describe("Errors.headerValue", () => {
  it("matches names case-insensitively", () => {
    const headers = { "Content-Type": "text/html", "svc-trace-id": "abc", "X-Many": ["a", "b"], "x-none": undefined }
    expect(Errors.headerValue(headers, "content-type")).toBe("text/html")
    expect(Errors.headerValue(headers, "SVC-TRACE-ID")).toBe("abc")
    expect(Errors.headerValue(headers, "x-many")).toBe("a")
    expect(Errors.headerValue(headers, "x-none")).toBeUndefined()
    expect(Errors.headerValue(headers, "missing")).toBeUndefined()
  })
})

describe("error classes", () => {
  it("carry everything that is known", () => {
    const error = new Errors.InvalidCard({
      message: "m",
      errorCode: "exchange.invalid.card",
      userMessage: "u",
      httpStatus: 400,
      traceId: "t",
      requestId: "r",
      transactionId: "x"
    })
    expect(error).toMatchObject({
      _tag: "InvalidCard",
      message: "m",
      errorCode: "exchange.invalid.card",
      userMessage: "u",
      httpStatus: 400,
      traceId: "t",
      requestId: "r",
      transactionId: "x"
    })
  })

  it.effect("are yieldable and caught by tag", () =>
    Effect.gen(function*() {
      const recovered = yield* Effect.fail(
        Errors.fromResponse({ status: 400, headers: {}, body: errorBody("exchange.invalid.card", "m", "Bad PIN") })
      ).pipe(
        Effect.catchTags({
          InvalidCard: (error) => Effect.succeed(`card: ${error.userMessage}`),
          ServerError: () => Effect.succeed("server")
        }),
        Effect.catch((error) => Effect.succeed(`other: ${error._tag}`))
      )
      expect(recovered).toBe("card: Bad PIN")
      const failure = yield* Effect.flip(new Errors.ServiceUnavailable({ message: "down", httpStatus: 503 }))
      expect(failure._tag).toBe("ServiceUnavailable")
    }))

  it("the local errors describe themselves", () => {
    const timeout = new Errors.PollTimeout({ transactionId: "T1", deadlineMillis: 60_000, polls: 12 })
    expect(timeout.message).toContain("T1")
    expect(timeout.message).toContain("60000")
    expect(timeout.message).toContain("track")
    expectTraits(timeout, "PollTimeout")
    const input = new Errors.InvalidCardInput({ field: "card.pinNumber", reason: "must not be empty" })
    expect(input.message).toBe("card.pinNumber must not be empty")
    expectTraits(input, "InvalidCardInput")
    const token = new Errors.TokenError({ message: "invalid_client", httpStatus: 400, oauthError: "invalid_client" })
    expectTraits(token, "TokenError")
    expectTraits(new Errors.TransportError({ message: "ECONNRESET", reason: "Reset" }), "TransportError")
  })

  it("a TokenError is transient when the token endpoint is out (no answer, 429, 5xx), not when it refuses", () => {
    const outage = [undefined, 429, 500, 503].map((httpStatus) =>
      new Errors.TokenError({ message: "token", ...(httpStatus === undefined ? {} : { httpStatus }) })
    )
    for (const error of outage) expect(Errors.isTransient(error), String(error.httpStatus)).toBe(true)
    for (const httpStatus of [400, 401, 403]) {
      expect(Errors.isTransient(new Errors.TokenError({ message: "refused", httpStatus }))).toBe(false)
    }
  })

  it("isOutage: the service's or the network's outages only, never a verdict on the request or its credentials", () => {
    const outageTags = new Set<string>(["TransportError", "ServiceUnavailable", "RateLimited", "ServerError"])
    for (const tag of Object.keys(Errors.Traits) as Array<Tag>) {
      if (tag === "TokenError") continue
      // the tag decides: any instance of it (made without its fields, as only the tag is read)
      const error = { _tag: tag } as unknown as Errors.QuoteFailure
      expect(Errors.isOutage(error), tag).toBe(outageTags.has(tag))
    }
    for (const httpStatus of [undefined, 429, 500, 503]) {
      const error = new Errors.TokenError({ message: "token", ...(httpStatus === undefined ? {} : { httpStatus }) })
      expect(Errors.isOutage(error), String(httpStatus)).toBe(true)
    }
    for (const httpStatus of [400, 401, 403]) {
      expect(Errors.isOutage(new Errors.TokenError({ message: "refused", httpStatus }))).toBe(false)
    }
  })

  it("the Traits table covers every error tag", () => {
    expect(Object.keys(Errors.Traits).sort()).toEqual(Object.keys(expectedTraits).sort())
    for (const [tag, traits] of Object.entries(expectedTraits)) {
      expect(Errors.Traits[tag as Tag], tag).toEqual(traits)
    }
  })
})

describe("Errors.customerMessage", () => {
  it("is the userMessage of customer-facing errors only", () => {
    const cardError = new Errors.CardNotAccepted({ message: "m", userMessage: "Card is locked to an account" })
    expect(Errors.customerMessage(cardError)).toEqual(Option.some("Card is locked to an account"))
    const merchant = new Errors.MerchantUnavailable({ message: "m", userMessage: "Try again later" })
    expect(Errors.customerMessage(merchant)).toEqual(Option.some("Try again later"))
    expect(Errors.customerMessage(new Errors.InvalidCard({ message: "m" }))).toEqual(Option.none())
    const server = new Errors.ServerError({ message: "m", userMessage: "internal detail" })
    expect(Errors.customerMessage(server)).toEqual(Option.none())
    const input = new Errors.InvalidCardInput({ field: "card.cardNumber", reason: "must not be empty" })
    expect(Errors.customerMessage(input)).toEqual(Option.none())
  })
})

describe("Errors.withAttempts", () => {
  it("records attempts and delay on a copy of the same class, keeping every field", () => {
    const original = Errors.fromResponse({
      status: 503,
      headers: { "svc-trace-id": "t", "retry-after": "2" },
      body: "",
      requestId: "r"
    })
    const copy = Errors.withAttempts(original, 4, Duration.millis(3500))
    expect(copy).toBeInstanceOf(Errors.ServiceUnavailable)
    expect(copy).not.toBe(original)
    expect(copy).toMatchObject({
      _tag: "ServiceUnavailable",
      message: "HTTP 503",
      httpStatus: 503,
      traceId: "t",
      requestId: "r",
      retryAfterMillis: 2000,
      attempts: 4,
      retryDelayMillis: 3500
    })
    expect(original.attempts).toBeUndefined()
  })

  it("keeps the reason of a TransportError", () => {
    const copy = Errors.withAttempts(
      new Errors.TransportError({ message: "timeout", reason: "Timeout" }),
      2,
      Duration.seconds(1)
    )
    expect(copy).toBeInstanceOf(Errors.TransportError)
    expect(copy.reason).toBe("Timeout")
    expect(copy.attempts).toBe(2)
    expect(copy.retryDelayMillis).toBe(1000)
  })
})

describe("Errors.withAttempts on a TokenError", () => {
  it("records the attempts; after a POST an attempt of which may have been processed, its requestId too", () => {
    const token = new Errors.TokenError({ message: "HTTP 503", httpStatus: 503 })
    expect(Errors.withAttempts(token, 3, Duration.millis(20), { requestId: "post-1", outcomeUnknown: true }))
      .toMatchObject({
        _tag: "TokenError",
        message: "HTTP 503",
        httpStatus: 503,
        attempts: 3,
        retryDelayMillis: 20,
        requestId: "post-1",
        outcomeUnknown: true
      })
    const unsent = Errors.withAttempts(token, 3, Duration.zero, { requestId: "post-2", outcomeUnknown: false })
    expect(unsent).not.toHaveProperty("requestId")
    expect(unsent).not.toHaveProperty("outcomeUnknown")
    const service = new Errors.ServerError({ message: "HTTP 500", requestId: "its-own" })
    expect(Errors.withAttempts(service, 2, Duration.zero, { requestId: "other", outcomeUnknown: true }))
      .toMatchObject({ requestId: "its-own", outcomeUnknown: true })
  })
})

describe("Errors.postResumption", () => {
  const ended = { requestId: "r-1", attempts: 10, outcomeUnknown: true }
  it.each([
    new Errors.TransportError({ message: "reset", reason: "Reset", ...ended }),
    new Errors.ServiceUnavailable({ message: "HTTP 503", ...ended }),
    new Errors.ServerError({ message: "HTTP 500", ...ended }),
    new Errors.UnexpectedResponse({ message: "cut", httpStatus: 201, ...ended }),
    new Errors.TokenError({ message: "HTTP 503", httpStatus: 503, ...ended })
  ])("a POST ended by $_tag after an attempt that may have been processed: its requestId and attempts", (error) => {
    expect(Errors.postResumption(error)).toEqual(Option.some({ requestId: "r-1", previousAttempts: 10 }))
  })

  it.each([
    // no attempt may have been processed: nothing to resume
    new Errors.TransportError({ message: "refused", reason: "Connect", requestId: "r-1", attempts: 10 }),
    new Errors.ServiceUnavailable({ message: "HTTP 503", requestId: "r-1", attempts: 10 }),
    new Errors.TokenError({ message: "HTTP 401", httpStatus: 401, attempts: 1 }),
    // errors made without the client, and local ones
    new Errors.TransportError({ message: "reset", reason: "Reset" }),
    new Errors.InvalidCardInput({ field: "card.cardNumber", reason: "is empty" })
  ])("not after $_tag without outcomeUnknown", (error) => {
    expect(Errors.postResumption(error)).toEqual(Option.none())
  })
})
