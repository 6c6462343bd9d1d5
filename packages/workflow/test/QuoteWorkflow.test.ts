import { describe, expect, it } from "@effect/vitest"
import { PollSchedule } from "@gcx/poller"
import * as Effect from "effect/Effect"
import { CardCipher, QuoteWorkflow } from "../src/index.js"

const submission = (fields: Partial<QuoteWorkflow.Submission>) =>
  new QuoteWorkflow.Submission({ transactionId: "txn-1", ...fields })

describe("QuoteWorkflow.remainingHint", () => {
  it("counts the hint from the POST's answer: after a replay, only what is left of it is waited", () => {
    const answered = submission({ expectedCompletionTime: 3, submittedAt: 10_000 })
    expect(QuoteWorkflow.remainingHint(answered, 10_000)).toBe(3)
    expect(QuoteWorkflow.remainingHint(answered, 11_500)).toBe(1.5)
    // a runner that takes the quote over after the hint has passed polls at once
    expect(QuoteWorkflow.remainingHint(answered, 19_000)).toBe(0)
  })

  it("honours the schedule's hint unit", () => {
    const answered = submission({ expectedCompletionTime: 3_000, submittedAt: 10_000 })
    expect(QuoteWorkflow.remainingHint(answered, 11_000, { schedule: { hintUnit: "milliseconds" } })).toBe(2_000)
  })

  it("keeps the hint as given with no answer time (persisted before it was recorded) or a custom schedule", () => {
    expect(QuoteWorkflow.remainingHint(submission({ expectedCompletionTime: 3 }), 50_000)).toBe(3)
    const answered = submission({ expectedCompletionTime: 3, submittedAt: 10_000 })
    expect(QuoteWorkflow.remainingHint(answered, 50_000, { schedule: PollSchedule.fixed("1 second") })).toBe(3)
    expect(QuoteWorkflow.remainingHint(submission({ submittedAt: 10_000 }), 50_000)).toBeUndefined()
  })
})

describe("QuoteWorkflow.executionId", () => {
  const card = new CardCipher.SealedCard({ masked: "****1234", productLineId: "pl-1", sealed: "AQ==" })

  it.effect("is the execution id effect/workflow derives from the requestId (rows written by either are found by both)", () =>
    Effect.gen(function*() {
      for (
        const requestId of [
          "req-1",
          "0f8e4a7c-5a55-4b3e-9f43-2b0f1c1d2e3f",
          "x".repeat(64),
          "~!#$%&()*+,-./:;<=>?@[]^_{|}"
        ]
      ) {
        const library = yield* QuoteWorkflow.QuoteWorkflow.executionId({ requestId, card })
        expect(QuoteWorkflow.executionIdSync(requestId)).toBe(library)
        expect(yield* QuoteWorkflow.executionId(requestId)).toBe(library)
      }
    }))

  it("depends on the requestId alone, as 32 hexadecimal digits", () => {
    expect(QuoteWorkflow.executionIdSync("req-1")).toMatch(/^[0-9a-f]{32}$/)
    expect(QuoteWorkflow.executionIdSync("req-1")).not.toBe(QuoteWorkflow.executionIdSync("req-2"))
  })
})
