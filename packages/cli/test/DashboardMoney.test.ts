/**
 * The sandbox dashboard shows money as the CLI does: its page's `money`
 * (plain JavaScript in `packages/sandbox/src/dashboard/index.html`), given an
 * amount as the API sends it (`Wire.Money`, a JSON number), prints what
 * `Render.money` prints for the same amount.
 */
import { describe, expect, it } from "@effect/vitest"
import { Wire } from "@gcx/core"
import { BigDecimal, Schema } from "effect"
import * as fc from "fast-check"
import * as Fs from "node:fs"
import * as Vm from "node:vm"
import * as Render from "../src/Render.js"

const page = Fs.readFileSync(new URL("../../sandbox/src/dashboard/index.html", import.meta.url), "utf8")

/** The page's `money`, run in a context of its own. */
const dashboardMoney = (): (amount: number) => string => {
  const source = /^const money = \(amount\) => \{\n[\s\S]*?\n\}$/m.exec(page)
  if (source === null) throw new Error("no `const money = (amount) => {` in the dashboard's page")
  return Vm.runInNewContext(`(() => { ${source[0]}; return money })()`) as (amount: number) => string
}

const encode = Schema.encodeSync(Wire.Money)

describe("the dashboard's money", () => {
  const money = dashboardMoney()

  it("prints the CLI's text for the amounts of the issue", () => {
    for (const [input, printed] of [["19.7", "19.70"], ["100", "100.00"], ["85", "85.00"], ["0.125", "0.125"]]) {
      const amount = BigDecimal.fromStringUnsafe(input!)
      expect(money(encode(amount) as number)).toBe(printed)
      expect(Render.money(amount)).toBe(printed)
    }
  })

  it("prints what Render.money prints for any amount the wire carries (up to 15 significant digits)", () => {
    const amounts = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 15n - 1n }), fc.integer({ min: 0, max: 4 }))
      .filter(([digits, scale]) => digits < 10n ** BigInt(11 + scale))
      .map(([digits, scale]) => BigDecimal.make(digits, scale))
    fc.assert(fc.property(amounts, (amount) => money(encode(amount) as number) === Render.money(amount)), {
      numRuns: 2_000
    })
  })
})
