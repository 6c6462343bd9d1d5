/**
 * The pure pieces of the CLI, in process: batch files, results keys, money,
 * exit codes, error lines and the embedded-mode rule.
 */
import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@gcx/core"
import { BigDecimal, ConfigProvider, Effect, Exit, Option, Redacted, Result } from "effect"
import * as BatchFile from "../src/BatchFile.js"
import * as BatchKey from "../src/BatchKey.js"
import * as Connection from "../src/Connection.js"
import * as Describe from "../src/Describe.js"
import * as DurablePoller from "../src/DurablePoller.js"
import * as ExitCode from "../src/ExitCode.js"
import * as Render from "../src/Render.js"
import { connectionFlags } from "./helpers.js"

const plain = (rows: ReadonlyArray<BatchFile.Row>) =>
  rows.map(({ card, line }) => ({
    line,
    cardNumber: Redacted.value(card.cardNumber),
    pinNumber: Redacted.value(card.pinNumber),
    productLineId: card.productLineId
  }))

describe("BatchFile", () => {
  it("reads CSV with the columns in any order, quoted fields, blank lines and a BOM", () => {
    const rows = Result.getOrThrow(BatchFile.parse(
      "\uFEFFpinNumber, productLineId ,cardNumber,note\r\n\r\n1234,1000,6006000000000001,\"a, \"\"quoted\"\" note\"\n\"99\",2000,42\n"
    ))
    expect(plain(rows)).toEqual([
      { line: 3, cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" },
      { line: 4, cardNumber: "42", pinNumber: "99", productLineId: "2000" }
    ])
    expect(Redacted.isRedacted(rows[0]!.card.pinNumber)).toBe(true)
  })

  it("reads JSON lines; an empty CSV field is an empty one, validated per card", () => {
    expect(plain(Result.getOrThrow(BatchFile.parse(`{"cardNumber":"1","pinNumber":"2","productLineId":1000}\n`))))
      .toEqual([{ line: 1, cardNumber: "1", pinNumber: "2", productLineId: "1000" }])
    expect(plain(Result.getOrThrow(BatchFile.parse("cardNumber,pinNumber,productLineId\n1,,\n"))))
      .toEqual([{ line: 2, cardNumber: "1", pinNumber: "", productLineId: "" }])
    // a trailing comma (an empty field past the header) shifts nothing
    expect(plain(Result.getOrThrow(BatchFile.parse("cardNumber,pinNumber,productLineId\n1,2,1000,\n"))))
      .toEqual([{ line: 2, cardNumber: "1", pinNumber: "2", productLineId: "1000" }])
    expect(Result.getOrThrow(BatchFile.parse(""))).toEqual([])
  })

  it("names the line of a problem, never its content", () => {
    const problems = [
      "cardNumber,pin\n1,2",
      "cardNumber,pinNumber,productLineId\n\"6006000000000001,1,2",
      "{\"cardNumber\":\"6006000000000001\",\"pinNumber\":\"1\",\"productLineId\":\"1\"}\n[6006000000000001]",
      "{\"cardNumber\":6006000000000001123,\"pinNumber\":\"1\",\"productLineId\":\"1\"}",
      "{\"cardNumber\":\"6006000000000001\",\"productLineId\":\"1\"}",
      // shifted fields: the PIN would be read, and written out, as the product line
      "cardNumber,pinNumber,productLineId\n6006000000000001,,4321,1000",
      "cardNumber,pinNumber,productLineId,note\n6006000000000001,4321"
    ].map((text) => Result.flip(BatchFile.parse(text)).pipe(Result.getOrThrow))
    expect(problems.map((problem) => problem.message)).toEqual([
      "batch file: line 1: the CSV header must name cardNumber, pinNumber, productLineId",
      "batch file: line 2: an unterminated quoted field",
      "batch file: line 2 is not a JSON object",
      "batch file: line 1: cardNumber must be a string",
      "batch file: line 1: pinNumber is missing",
      "batch file: line 2: 4 fields where the header names 3",
      "batch file: line 2: 2 fields where the header names 4"
    ])
    for (const problem of problems) expect(problem.message).not.toMatch(/6006|4321/)
    expect(problems.every((problem) => problem.code === ExitCode.ExitCode.Usage)).toBe(true)
  })
})

describe("BatchKey.fingerprint", () => {
  const row = (cardNumber: string, pin = "1", line = 2): BatchFile.Row => ({
    line,
    card: { cardNumber: Redacted.make(cardNumber), pinNumber: Redacted.make(pin), productLineId: "1000" }
  })
  const key = (text: string): BatchKey.BatchKey => ({
    secret: Redacted.make(new TextEncoder().encode(text)),
    source: "test"
  })

  it("is stable wherever the row is, and differs by card, PIN and key", () => {
    const fingerprint = BatchKey.fingerprint(key("secret"), row("6006000000000001"))
    expect(fingerprint).toMatch(/^[0-9a-f]{32}$/)
    expect(BatchKey.fingerprint(key("secret"), row("6006000000000001", "1", 9))).toBe(fingerprint)
    expect(
      new Set([
        fingerprint,
        BatchKey.fingerprint(key("secret"), row("6006000000000019")),
        BatchKey.fingerprint(key("secret"), row("6006000000000001", "2")),
        BatchKey.fingerprint(key("other"), row("6006000000000001"))
      ]).size
    ).toBe(4)
    expect(BatchKey.id(key("secret"))).not.toBe(BatchKey.id(key("other")))
  })
})

describe("Describe.quoteFailure", () => {
  it("says a deadline as people read it, and how to follow the transaction", () => {
    const line = Describe.quoteFailure(new Errors.PollTimeout({ transactionId: "T1", deadlineMillis: 2000, polls: 3 }))
    expect(line).toContain("transaction T1 did not complete within 2 s; follow it with: gcx watch T1")
  })

  it("tells input gcx refused before any I/O from the service's refusal, and points at --help", () => {
    const local = new Errors.InvalidRequest({ message: "transactionId must be 1 to 128 letters, digits, '-' or '_'" })
    expect(ExitCode.ofFailure(local, "watch")).toEqual({
      code: 2,
      line: Option.some(
        "invalid input, nothing was sent (InvalidRequest): transactionId must be 1 to 128 letters, digits, '-' or '_' " +
          "(see gcx watch --help)"
      )
    })
    const answered = new Errors.InvalidRequest({ message: "m", errorCode: "exchange.invalid.request", httpStatus: 400 })
    const line = ExitCode.ofFailure(answered, "watch").line
    expect(Option.getOrThrow(line)).toMatch(
      /^the service refused the request \(InvalidRequest, exchange\.invalid\.request, HTTP 400\)/
    )
    expect(Option.getOrThrow(line)).not.toContain("--help")
  })
})

describe("Render.money", () => {
  it("prints at least two decimals, exactly", () => {
    const cases = [["100", "100.00"], ["92.5", "92.50"], ["0.125", "0.125"], ["-3.1", "-3.10"], ["0", "0.00"]]
    for (const [input, printed] of cases) expect(Render.money(BigDecimal.fromStringUnsafe(input!))).toBe(printed)
  })
})

describe("ExitCode", () => {
  const props = { message: "m", userMessage: "shown to the customer", errorCode: "code" }

  it("maps each error group to its code", () => {
    const cases: ReadonlyArray<readonly [Errors.QuoteFailure, ExitCode.ExitCode]> = [
      [new Errors.InvalidCard(props), 3],
      [new Errors.CardValueOutOfRange(props), 3],
      [new Errors.CardNotAccepted(props), 3],
      [new Errors.OfferExpired(props), 3],
      [new Errors.MerchantUnavailable(props), 4],
      [new Errors.InvalidApiKey(props), 2],
      [new Errors.PartnerNotFound(props), 2],
      [new Errors.TransactionNotFound(props), 2],
      [new Errors.InvalidRequest(props), 2],
      [new Errors.InvalidCardInput({ field: "card.pinNumber", reason: "must not be empty" }), 2],
      [new Errors.TokenError({ message: "refused", httpStatus: 401 }), 2],
      [new Errors.TokenError({ message: "no answer" }), 5],
      [new Errors.ServerError(props), 5],
      [new Errors.ServiceUnavailable(props), 5],
      [new Errors.RateLimited(props), 5],
      [new Errors.Unauthorized(props), 5],
      [new Errors.TransportError({ ...props, reason: "Connect" }), 5],
      [new Errors.UnexpectedResponse(props), 5],
      [new Errors.UnknownServiceError(props), 5],
      [new Errors.PollTimeout({ transactionId: "T", deadlineMillis: 1, polls: 1 }), 5],
      [new Errors.CardDecryptionError({ requestId: "r", reason: "authentication failed" }), 2]
    ]
    for (const [error, code] of cases) expect([error._tag, ExitCode.ofQuoteFailure(error)]).toEqual([error._tag, code])
  })

  it("ranks a batch's outcomes: usage, service, merchant, card, completed", () => {
    const { CardOutcome, Completed, MerchantOutcome, ServiceFailure, Usage } = ExitCode.ExitCode
    const worst = (codes: ReadonlyArray<ExitCode.ExitCode>) => codes.reduce(ExitCode.worst, Completed)
    expect(worst([Completed, CardOutcome, MerchantOutcome])).toBe(MerchantOutcome)
    expect(worst([CardOutcome, ServiceFailure, MerchantOutcome])).toBe(ServiceFailure)
    expect(worst([ServiceFailure, Usage, CardOutcome])).toBe(Usage)
  })

  it("reports a failure in one line, with the user message when there is one", () => {
    expect(ExitCode.describeQuoteFailure(new Errors.InvalidCard({ ...props, httpStatus: 400 })))
      .toBe("the card was refused (InvalidCard, code, HTTP 400): shown to the customer")
    expect(
      ExitCode.describeQuoteFailure(new Errors.ServerError({ message: "HTTP\n500", httpStatus: 500, attempts: 4 }))
    )
      .toBe("the service failed (ServerError, HTTP 500, 4 attempts): HTTP 500")
    // a card no data key opens is a local fault of the keys, never the service's refusal
    expect(
      ExitCode.describeQuoteFailure(new Errors.CardDecryptionError({ requestId: "r", reason: "x", keyId: "0a1b2c3d" }))
    )
      .toBe(
        "the sealed card could not be opened (CardDecryptionError): the card of quote r was sealed with the data key " +
          "0a1b2c3d, which is neither GCX_DATA_KEY nor GCX_DATA_KEY_PREVIOUS: give every node the same GCX_DATA_KEY, " +
          "or set GCX_DATA_KEY_PREVIOUS to that key"
      )
    // on a cluster the node that failed to open it (a runner) may not be this one: its keys are named
    expect(
      new Errors.CardDecryptionError({ requestId: "r", reason: "x", keyId: "0a1b2c3d", nodeKeyIds: ["a2f40dbe"] })
        .message
    ).toContain("which is neither the GCX_DATA_KEY (a2f40dbe) of the node that opened it: give every node")
  })
})

describe("Connection", () => {
  const configured = (env: Record<string, string>, flags: Partial<Connection.Flags> = {}) =>
    Connection.embeddedReason(connectionFlags(flags)).pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
    )

  it.effect("is embedded when nothing is configured or --embedded is given", () =>
    Effect.gen(function*() {
      expect(yield* configured({})).toEqual(Option.some("no GCX_* connection settings (--embedded)"))
      expect(yield* configured({ GCX_CLIENT_ID: " ", GCX_SANDBOX_TIME_SCALE: "0.1" })).toEqual(
        Option.some("no GCX_* connection settings (--embedded)")
      )
      expect(yield* configured({ GCX_BASE_URL: "http://x" }, { embedded: true })).toEqual(Option.some("--embedded"))
    }))

  it.effect("is remote as soon as one connection setting is given, by variable or flag", () =>
    Effect.gen(function*() {
      expect(yield* configured({ GCX_ENV: "production" })).toEqual(Option.none())
      expect(yield* configured({ GCX_API_KEY: "k" })).toEqual(Option.none())
      expect(yield* configured({}, { baseUrl: Option.some("http://x") })).toEqual(Option.none())
    }))
})

describe("DurablePoller.terminalEvent", () => {
  it.effect("a fault inside gcx is a Failed that names the requestId and how to read it later, never the service", () =>
    Effect.gen(function*() {
      const fault = Exit.die(new Error("a bug"))
      expect(DurablePoller.isFault(fault)).toBe(true)
      const event = yield* DurablePoller.terminalEvent(fault, "T1", "req-1")
      expect(event._tag).toBe("Failed")
      const message = event._tag === "Failed" ? event.error.message : ""
      expect(message).toContain("the outcome of the durable quote req-1 could not be read")
      expect(message).toContain("gcx result req-1 --wait")
      expect(message).not.toContain("the service")
      // the quote's own failure is no fault
      expect(DurablePoller.isFault(Exit.fail(new Errors.InvalidCard({ message: "invalid card" })))).toBe(false)
    }))
})
