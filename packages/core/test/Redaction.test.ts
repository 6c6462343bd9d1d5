import { describe, expect, it } from "@effect/vitest"
import { Errors, Quote, QuoteEvent, Redaction, Transaction } from "@gcx/core"
import { Option, Result, Schema, type SchemaIssue } from "effect"
import * as fc from "fast-check"
import { prop, sampleStatus, SENTINEL_CARD, SENTINEL_PIN } from "./fixtures.js"

const issueOf = (
  schema: Schema.Decoder<unknown>,
  input: unknown,
  all = false,
  reportInput = false
): SchemaIssue.Issue =>
  Option.getOrThrow(
    Result.getFailure(
      Schema.decodeUnknownResult(schema, { ...(all ? { errors: "all" } : {}), reportInput })(input)
    )
  ).issue

describe("Redaction.describeParseIssue", () => {
  it("names the path and what was expected", () => {
    const status = (patch: Record<string, unknown>) => ({ ...sampleStatus, ...patch })
    const { response: _, ...withoutResponse } = sampleStatus
    expect(Redaction.describeParseIssue(issueOf(Transaction.TransactionStatus, withoutResponse)))
      .toBe("response is missing")
    expect(Redaction.describeParseIssue(issueOf(Transaction.TransactionStatus, status({ response: undefined }))))
      .toBe("response is not an object")
    expect(
      Redaction.describeParseIssue(
        issueOf(Transaction.TransactionStatus, status({ response: { ...sampleStatus.response, isCompleted: "yes" } }))
      )
    ).toBe("response.isCompleted is not a boolean")
    expect(Redaction.describeParseIssue(issueOf(Transaction.TransactionStatus, null))).toBe("body is not an object")
  })

  it("writes array indices as [n]", () => {
    const steps = [sampleStatus.steps[0], { descriptionTag: "x", isCompleted: 1 }]
    expect(Redaction.describeParseIssue(issueOf(Transaction.TransactionStatus, { ...sampleStatus, steps })))
      .toBe("steps[1].isCompleted is not a boolean")
  })

  it("joins the alternatives of an optional field, and drops them when a deeper problem says which was meant", () => {
    const issue = issueOf(Transaction.TransactionStatus, {
      ...sampleStatus,
      createdTimestamp: "not a time",
      percentComplete: Infinity,
      steps: [{ descriptionTag: "x", isCompleted: "no" }],
      response: { ...sampleStatus.response, actualCardValue: "abc" }
    }, true)
    const description = Redaction.describeParseIssue(issue, 50)
    expect(description.split("; ")).toEqual([
      // Effect 4 names the type DateTime.Utc (Effect 3: DateTimeUtc)
      "createdTimestamp is not DateTime.Utc or null",
      "steps[0].isCompleted is not a boolean",
      "percentComplete is not a finite number or null",
      "response.actualCardValue is not Money or null"
    ])
  })

  it("names literal alternatives", () => {
    const issue = issueOf(Errors.TransportError, { _tag: "TransportError", message: "m", reason: "Later" })
    expect(Redaction.describeParseIssue(issue)).toBe(
      "reason is not \"Connect\" or \"Reset\" or \"Timeout\" or \"Aborted\" or \"Other\""
    )
    expect(Redaction.describeParseIssue(issueOf(Schema.Literal(1n), 2))).toBe("body is not 1n")
  })

  it("names a class by its wire shape, and a tagged union by its tag", () => {
    expect(Redaction.describeParseIssue(issueOf(Transaction.TransactionStatus, { ...sampleStatus, request: "x" })))
      .toBe("request is not an object or null")
    const tags = "\"Submitted\", \"Progress\", \"StepCompleted\", \"Retrying\", \"Completed\" or \"Failed\""
    for (const junk of [{ _tag: "Nope" }, null, []]) {
      expect(Redaction.describeParseIssue(issueOf(QuoteEvent.QuoteEvent, junk)))
        .toBe(`body is not an object whose _tag is ${tags}`)
    }
  })

  it("limits the number of problems it lists", () => {
    const steps = Array.from({ length: 10 }, () => ({ isCompleted: "no" }))
    const description = Redaction.describeParseIssue(
      issueOf(Transaction.TransactionStatus, { ...sampleStatus, steps }, true),
      3
    )
    expect(description).toBe(
      "steps[0].descriptionTag is missing; steps[0].isCompleted is not a boolean; steps[1].descriptionTag is missing; and 17 more"
    )
  })

  it("stays fast on a ParseError with thousands of issues", () => {
    const steps = Array.from({ length: 2_000 }, () => ({ isCompleted: "no" }))
    const issue = issueOf(Transaction.TransactionStatus, { ...sampleStatus, steps }, true)
    const started = performance.now()
    expect(Redaction.describeParseIssue(issue)).toMatch(/and 3995 more$/)
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  it("scrubs digits from keys that come from the input", () => {
    const issue = Option.getOrThrow(Result.getFailure(
      Schema.decodeUnknownResult(Quote.QuoteRequest, { onExcessProperty: "error" })({
        card: { cardNumber: "1", pinNumber: "2", productLineId: "3", [SENTINEL_CARD]: true }
      })
    )).issue
    const description = Redaction.describeParseIssue(issue)
    expect(description).toBe("card.****2345 is not allowed")
  })

  it("never contains a failing string value", () => {
    for (const where of ["isCompleted", "percentComplete", "expectedCompletionTime"]) {
      const issue = issueOf(Quote.QuoteResponse, { ...sampleStatus.response, [where]: SENTINEL_CARD }, true)
      expect(Redaction.describeParseIssue(issue)).toContain(where)
      expect(Redaction.describeParseIssue(issue)).not.toContain(SENTINEL_CARD)
    }
  })

  it("never contains a failing value even when the issue holds it (reportInput)", () => {
    for (const where of ["isCompleted", "percentComplete", "actualCardValue", "responseTimestamp", "transactionId"]) {
      const issue = issueOf(Quote.QuoteResponse, { ...sampleStatus.response, [where]: [SENTINEL_CARD] }, true, true)
      // the issue does hold the value: Schema's own formatter would show it
      expect(String(new Schema.SchemaError(issue))).toContain(SENTINEL_CARD)
      expect(Redaction.describeParseIssue(issue)).toContain(where)
      expect(Redaction.describeParseIssue(issue)).not.toContain(SENTINEL_CARD)
    }
  })

  prop(
    "never contains the values that failed",
    {
      secret: fc.constantFrom(SENTINEL_CARD, SENTINEL_PIN),
      where: fc.constantFrom("isCompleted", "transactionId", "percentComplete", "actualCardValue", "responseTimestamp"),
      wrap: fc.constantFrom(
        (secret: string): unknown => [secret],
        (secret: string): unknown => ({ value: secret }),
        (secret: string): unknown => ({ [secret]: [secret] })
      )
    },
    ({ secret, where, wrap }) => {
      for (const reportInput of [false, true]) {
        const issue = issueOf(
          Quote.QuoteResponse,
          { ...sampleStatus.response, [where]: wrap(secret) },
          true,
          reportInput
        )
        const description = Redaction.describeParseIssue(issue, 50)
        expect(description).toContain(where)
        expect(description).not.toContain(secret)
      }
    },
    { numRuns: 50 }
  )
})

describe("Redaction.serviceText", () => {
  it("masks runs of 8 or more digits and leaves short texts as they are", () => {
    expect(Redaction.serviceText("card 6006123456789012345 refused")).toBe("card ****2345 refused")
    expect(Redaction.serviceText("PIN 1234567 refused")).toBe("PIN 1234567 refused")
    expect(Redaction.serviceText("x".repeat(1024))).toBe("x".repeat(1024))
  })

  it("cuts a longer text to 1,024 characters, with a marker giving the length as sent", () => {
    const cut = Redaction.serviceText("e".repeat(900_000))
    expect(cut).toHaveLength(1024)
    expect(cut).toMatch(/^e+… \(cut from 900,000 characters\)$/)
    expect(Redaction.serviceText("x".repeat(1025))).toHaveLength(1024)
    expect(Redaction.serviceText("x".repeat(300), 200)).toMatch(/^x+… \(cut from 300 characters\)$/)
    expect(Redaction.serviceText("x".repeat(300), 200)).toHaveLength(200)
  })

  it("masks before it cuts: a card number across the cut is never left partly in clear", () => {
    for (let at = 960; at < 1030; at++) {
      const text = `${"a".repeat(at)}${SENTINEL_CARD}${"b".repeat(2000)}`
      const kept = Redaction.serviceText(text)
      expect(kept.length).toBeLessThanOrEqual(1024)
      expect(kept).not.toMatch(/\d{8}/)
      expect(kept).not.toContain(SENTINEL_CARD.slice(0, 6))
    }
  })

  it("never cuts a surrogate pair in half", () => {
    const kept = Redaction.serviceText("😀".repeat(1000))
    expect(kept.length).toBeLessThanOrEqual(1024)
    expect(() => encodeURIComponent(kept)).not.toThrow()
  })
})

describe("Redaction.traceId", () => {
  it("keeps up to 128 characters of [A-Za-z0-9._:-] with no run of 8 digits", () => {
    for (const kept of ["a", "0af7651916cd43dd8448eb211c80319c", "1-5759e988-bd862e3f", "a.b_c:d-E", "1234567x"]) {
      expect(Redaction.traceId(kept)).toBe(kept)
      expect(Redaction.checkTraceId(kept)).toEqual(Result.succeed(kept))
    }
    expect(Redaction.traceId("x".repeat(128))).toBe("x".repeat(128))
    expect(Redaction.traceId(undefined)).toBeUndefined()
  })

  it("drops anything else, and says why", () => {
    const dropped: ReadonlyArray<readonly [string, Redaction.TraceIdProblem]> = [
      ["x".repeat(129), "length"],
      ["x".repeat(15_000), "length"],
      ["", "length"],
      [SENTINEL_CARD, "digits"],
      ["trace-12345678", "digits"],
      ["a b", "characters"],
      ["trace/1", "characters"],
      ["tráce", "characters"],
      ["trace\u001b]0;x\u0007", "characters"]
    ]
    for (const [value, problem] of dropped) {
      expect(Redaction.traceId(value)).toBeUndefined()
      expect(Redaction.checkTraceId(value)).toEqual(Result.fail(problem))
    }
  })
})

describe("Redaction.location", () => {
  // A transaction id as the sandbox draws them, with 8 digits in a row (it was once masked to `GGS****6456`)
  const transactionId = "W8HWCYSA0GGS28906456P0B9KP"
  const card = "4111111111111111"

  it("keeps the transaction's segment whole, and masks digits elsewhere", () => {
    expect(Redaction.location(`/exchange/quote/${transactionId}`, transactionId)).toBe(
      `/exchange/quote/${transactionId}`
    )
    expect(Redaction.location(`http://h/${card}/quote/${transactionId}?card=${card}#${card}`, transactionId)).toBe(
      `http://h/****1111/quote/${transactionId}?card=****1111#****1111`
    )
  })

  it("masks a Location that does not end with the transaction's segment as any service text", () => {
    expect(Redaction.location(`/exchange/quote/${card}`, transactionId)).toBe("/exchange/quote/****1111")
    expect(Redaction.location(`/exchange/quote/${transactionId}x${card}`, transactionId)).toBe(
      Redaction.serviceText(`/exchange/quote/${transactionId}x${card}`)
    )
  })

  it("cuts a long Location to the service-text limit", () => {
    const long = `/exchange/quote/${transactionId}?${"q".repeat(5_000)}${card}`
    const kept = Redaction.location(long, transactionId)
    expect(kept.length).toBeLessThanOrEqual(Redaction.maxServiceText)
    expect(kept.startsWith(`/exchange/quote/${transactionId}?q`)).toBe(true)
    expect(kept).not.toContain(card)
  })
})
