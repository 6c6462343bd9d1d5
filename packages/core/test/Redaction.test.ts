import { describe, expect, it } from "@effect/vitest"
import { Errors, Quote, Redaction, Transaction } from "@gcx/core"
import { Either, FastCheck as fc, Option, type ParseResult, Schema } from "effect"
import { sampleStatus, SENTINEL_CARD, SENTINEL_PIN } from "./fixtures.js"

const issueOf = <A, I>(schema: Schema.Schema<A, I>, input: unknown, all = false): ParseResult.ParseIssue =>
  Option.getOrThrow(
    Either.getLeft(Schema.decodeUnknownEither(schema, all ? { errors: "all" } : undefined)(input))
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
      "createdTimestamp is not DateTimeUtc or null",
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
    const issue = Option.getOrThrow(Either.getLeft(
      Schema.decodeUnknownEither(Quote.QuoteRequest, { onExcessProperty: "error" })({
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

  it.prop(
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
      const issue = issueOf(Quote.QuoteResponse, { ...sampleStatus.response, [where]: wrap(secret) }, true)
      const description = Redaction.describeParseIssue(issue, 50)
      expect(description).toContain(where)
      expect(description).not.toContain(secret)
    },
    { fastCheck: { numRuns: 50 } }
  )
})
