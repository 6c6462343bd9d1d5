/**
 * Money as people read it: the amounts of a quote (`BigDecimal`) shown with at
 * least two decimals, exactly, never through a float. The CLI, the demo and the
 * README's programs print amounts with `format`.
 */
import * as BigDecimal from "effect/BigDecimal"

/**
 * An amount with at least two decimals, exactly: `100.00`, `92.50`, `0.125`,
 * `-3.10` (`BigDecimal.format` drops trailing zeros: `100`, `92.5`).
 *
 * @example
 * import { Money } from "@gcx/core"
 * import { BigDecimal } from "effect"
 *
 * Money.format(BigDecimal.fromStringUnsafe("100")) // "100.00"
 */
export const format = (amount: BigDecimal.BigDecimal): string => {
  const normalized = BigDecimal.normalize(amount)
  if (normalized.scale > 2) return BigDecimal.format(normalized)
  const cents = BigDecimal.scale(normalized, 2).value
  const digits = (cents < 0n ? -cents : cents).toString().padStart(3, "0")
  return `${cents < 0n ? "-" : ""}${digits.slice(0, -2)}.${digits.slice(-2)}`
}
