import { describe, expect, it } from "@effect/vitest"
import { PollSchedule } from "@gcx/poller"
import type { Duration } from "effect"
import { QuoteWorkflow } from "../src/index.js"

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

describe("QuoteWorkflow.submits", () => {
  it("refuses a resume delay that is not a duration from 0 to 1 day, naming the setting", () => {
    for (const delay of [Number.POSITIVE_INFINITY, -5, Number.NaN, "soon", "-1 seconds", "25 hours", 1e20]) {
      expect(() => QuoteWorkflow.submits({ resumeDelays: ["1 second", delay as Duration.Input] })).toThrow(
        /^resumeDelays\[1\] must be a duration from 0 to 1 day/
      )
    }
    // zero is a run again at once; fractions of a millisecond are taken up to the next one
    expect(typeof QuoteWorkflow.submits({ resumeDelays: [0, 0.4, "2 minutes", "1 day"] })).toBe("function")
  })
})

describe("QuoteWorkflow.outcomes", () => {
  it("refuses track options the poller would refuse, naming them, when made: never a quote ended by them", () => {
    for (
      const [track, message] of [
        [{ deadline: "soon" }, "deadline must be a duration"],
        [{ deadline: -1 }, "deadline must not be negative"],
        [{ schedule: { maxDelay: "banana" } }, "schedule.maxDelay must be a duration"],
        [{ schedule: { factor: 0 } }, "schedule.factor must be a number above 0"]
      ] as const
    ) {
      expect(() => QuoteWorkflow.outcomes(track as never)).toThrow(`the durable quotes' track options: ${message}`)
    }
    // valid ones, a custom schedule included, make the activity
    expect(typeof QuoteWorkflow.outcomes({ deadline: "5 minutes", schedule: { jitter: 0 } })).toBe("function")
    expect(typeof QuoteWorkflow.outcomes({ schedule: PollSchedule.fixed("1 second") })).toBe("function")
  })
})
