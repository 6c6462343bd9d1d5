/**
 * The sandbox's fixed test data: partners, product lines and scenario cards.
 * Tests and users rely on these values; the package README documents them.
 * The admin key is not among them: each sandbox has its own (`Service.adminKey`).
 */
import * as BigDecimal from "effect/BigDecimal"

/** A partner account of the sandbox. */
export interface Partner {
  readonly clientId: string
  readonly clientSecret: string
  readonly apiKey: string
  /** The numeric creator id that the transaction status reports as `createrid`. */
  readonly creatorId: number
  /**
   * Set for a partner configured for human-based balance inquiries: the
   * UserMessage of a failed check then comes from this agent, not from the
   * merchant website.
   */
  readonly agent?: { readonly name: string } | undefined
}

/** The default partner. */
export const partner = {
  clientId: "sandbox-partner",
  clientSecret: "sandbox-secret",
  apiKey: "sandbox-api-key",
  creatorId: 1001
} as const satisfies Partner

/** A partner configured for human-based balance inquiries. */
export const agentPartner = {
  clientId: "sandbox-agent",
  clientSecret: "sandbox-agent-secret",
  apiKey: "sandbox-agent-key",
  creatorId: 1002,
  agent: { name: "Robin at the balance desk" }
} as const satisfies Partner

/** Every partner the sandbox knows by default. */
export const partners: ReadonlyArray<Partner> = [partner, agentPartner]

/** A product line (merchant): the rate the exchange pays and the balances it accepts. */
export interface ProductLine {
  readonly id: string
  readonly name: string
  /** exchangeCardValue = actualCardValue × rate, rounded half-even to cents. */
  readonly rate: BigDecimal.BigDecimal
  /** The smallest balance accepted. */
  readonly min: BigDecimal.BigDecimal
  /** The largest balance accepted. */
  readonly max: BigDecimal.BigDecimal
}

const productLine = (id: string, name: string, rate: string, min: string, max: string): ProductLine => ({
  id,
  name,
  rate: BigDecimal.fromStringUnsafe(rate),
  min: BigDecimal.fromStringUnsafe(min),
  max: BigDecimal.fromStringUnsafe(max)
})

/** The product lines the sandbox accepts. */
export const productLines: ReadonlyArray<ProductLine> = [
  productLine("1000", "Sandbox Books", "0.85", "5.00", "500.00"),
  productLine("2000", "Sandbox Coffee", "0.90", "10.00", "1000.00"),
  productLine("3000", "Sandbox Cinema", "0.75", "1.00", "50.00"),
  productLine("4000", "Sandbox Travel", "0.925", "25.00", "2000.00")
]

/** The product line used by examples and tests. */
export const defaultProductLineId = "1000"

/** The scenario cards (see the README table). Any other card succeeds with a balance derived from its number. */
export const Cards = {
  /** Success, balance 100.00, completes after about 2 s. */
  success: "6006000000000001",
  /** Success that completes at once: the POST itself answers completed. Balance 50.00. */
  instant: "6006000000000019",
  /** exchange.card.value.out.of.range (zero balance). */
  zeroBalance: "6006000000000027",
  /** exchange.invalid.card. */
  invalid: "6006000000000035",
  /** exchange.card.not.accepted: a merchandise return credit. */
  notAccepted: "6006000000000043",
  /** exchange.card.merchant.unavailable. */
  merchantUnavailable: "6006000000000050",
  /** Success after about 30 s, balance 250.00. */
  slow: "6006000000000068"
} as const

/** A PIN that always gives exchange.invalid.card, whatever the card. */
export const rejectedPin = "0000"

/** A PIN for the examples; any PIN other than `rejectedPin` is accepted. */
export const pin = "1234"

/** The default stage segment of the quote paths. */
export const stage = "sandbox"
