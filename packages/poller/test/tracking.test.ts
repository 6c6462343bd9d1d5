import { describe, expect, it } from "@effect/vitest"
import { Transaction } from "@gcx/core"
import { BigDecimal, DateTime, Schema } from "effect"
import * as Tracking from "../src/internal/tracking.js"

const at = DateTime.makeUnsafe("2026-11-21T10:00:00.000Z")
const status = (wire: object) =>
  Schema.decodeUnknownSync(Transaction.TransactionStatus)({
    response: { transactionId: "TX", isCompleted: false },
    ...wire
  })
const step = (descriptionTag: string, isCompleted: boolean) => ({ descriptionTag, isCompleted })
const tags = (observed: Tracking.Observed) => observed.events.map((event) => event._tag)

describe("tracking", () => {
  it("emits Progress only when the percentage or a step changed, and StepCompleted once per step", () => {
    const vault = Transaction.StepTags.vaultCreditCard
    const fraud = Transaction.StepTags.fraudCheck
    const first = Tracking.observe(
      Tracking.initial("TX"),
      status({ percentComplete: 10, steps: [step(vault, false)] }),
      at
    )
    expect(tags(first)).toEqual(["Progress"])
    const same = Tracking.observe(first.tracking, status({ percentComplete: 10, steps: [step(vault, false)] }), at)
    expect(tags(same)).toEqual([])
    const vaultDone = Tracking.observe(
      same.tracking,
      status({ percentComplete: 50, steps: [step(vault, true), step(fraud, false)] }),
      at
    )
    expect(tags(vaultDone)).toEqual(["Progress", "StepCompleted"])
    const again = Tracking.observe(
      vaultDone.tracking,
      status({ percentComplete: 50, steps: [step(vault, true), step(fraud, false)] }),
      at
    )
    expect(tags(again)).toEqual([])
    const done = Tracking.observe(
      again.tracking,
      status({
        percentComplete: 100,
        steps: [step(vault, true), step(fraud, true)],
        response: { transactionId: "TX", isCompleted: true, actualCardValue: 100, exchangeCardValue: 85 }
      }),
      at
    )
    expect(tags(done)).toEqual(["Progress", "StepCompleted", "Completed"])
    expect(done.done).toBe(true)
    const completed = done.events[2]
    expect(completed?._tag === "Completed" && BigDecimal.format(completed.quote.exchangeCardValue)).toBe("85")
  })

  it("never hands out card values before isCompleted", () => {
    const observed = Tracking.observe(
      Tracking.initial("TX"),
      status({ response: { transactionId: "TX", isCompleted: false, actualCardValue: 100, exchangeCardValue: 85 } }),
      at
    )
    expect(observed.done).toBe(false)
    expect(JSON.stringify(observed.events)).not.toContain("85")
  })

  it("turns a completed quote without values into a typed failure", () => {
    const observed = Tracking.observe(
      Tracking.initial("TX"),
      status({ response: { transactionId: "TX", isCompleted: true } }),
      at
    )
    const last = observed.events.at(-1)
    expect(last?._tag).toBe("Failed")
    expect(last?._tag === "Failed" && last.error._tag).toBe("UnexpectedResponse")
  })

  it("reads the percentage from the status, then the quote, then isCompleted", () => {
    expect(Tracking.percentOf(status({ percentComplete: 40 }))).toBe(40)
    expect(Tracking.percentOf(status({ response: { transactionId: "TX", isCompleted: false, percentComplete: 30 } })))
      .toBe(30)
    expect(Tracking.percentOf(status({}))).toBe(0)
  })
})
