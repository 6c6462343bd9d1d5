import { describe, expect, it } from "@effect/vitest"
import * as Money from "@gcx/core/Money"
import * as BigDecimal from "effect/BigDecimal"

describe("Money.format", () => {
  it("prints at least two decimals, exactly, as the CLI shows money", () => {
    const cases = [
      ["100", "100.00"],
      ["85", "85.00"],
      ["92.5", "92.50"],
      ["0.125", "0.125"],
      ["-3.1", "-3.10"],
      ["0", "0.00"],
      ["0.05", "0.05"],
      ["123456789012.5678", "123456789012.5678"]
    ]
    for (const [input, printed] of cases) expect(Money.format(BigDecimal.fromStringUnsafe(input!))).toBe(printed)
  })

  it("keeps a scale given by the wire (100.000 is 100.00)", () => {
    expect(Money.format(BigDecimal.make(100000n, 3))).toBe("100.00")
  })
})
