/**
 * The description of the OpenAPI document (`info.description`, the head of
 * the `/docs` page): how to try the API from the page, with the test
 * partners' credentials, the product lines and the scenario cards, each
 * written from the sandbox's own definitions (`TestData`, `Scenarios`).
 */
import { Routes } from "@gcx/core"
import * as BigDecimal from "effect/BigDecimal"
import * as Scenarios from "../Scenarios.js"
import * as TestData from "../TestData.js"

/** A Markdown table: a header row, then one row per entry. */
const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string =>
  [header, header.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n")

const code = (text: string): string => `\`${text}\``

/** `6006000000000001` as code; `any other` as it is. */
const cards = (text: string): string => /^\d+$/.test(text) ? code(text) : text

/** The Markdown of the "Try it out" part of the docs page. */
export const tryItOut: string = [
  "## Try it out",
  "",
  `1. **${code(`POST ${Routes.tokenPath}`)}**, *Try it out*: ${code("grant_type")} ${
    code("client_credentials")
  }, a test partner's ${code("client_id")} and ${code("client_secret")} below; copy the ${
    code("access_token")
  } it answers.`,
  `2. **Authorize** (the lock): paste the token as the ${code("bearer")} value.`,
  `3. Every exchange call takes the partner's ${code("x-api-key")} and a ${code("requestid")} of your own ` +
  `(letters, digits, ${code("-")}, ${code("_")}; the same one again replays the first answer). ` +
  `${code(`POST ${Routes.quotePath()}`)} with a card below, then ${
    code(`GET ${Routes.quotePath()}/{transactionId}`)
  } until it completes.`,
  "",
  "### Test partners",
  "",
  table(
    ["client_id", "client_secret", "x-api-key", "note"],
    TestData.partners.map((partner) => [
      code(partner.clientId),
      code(partner.clientSecret),
      code(partner.apiKey),
      partner.agent === undefined ? "" : `human-based balance inquiries (${partner.agent.name})`
    ])
  ),
  "",
  "### Product lines",
  "",
  table(
    ["productLineId", "merchant", "rate", "accepted balances"],
    TestData.productLines.map((line) => [
      code(line.id),
      line.name,
      BigDecimal.format(line.rate),
      `${Scenarios.money(line.min)} to ${Scenarios.money(line.max)}`
    ])
  ),
  "",
  `### Scenario cards`,
  "",
  `Any PIN (${code(TestData.pin)}, say) but ${code(TestData.rejectedPin)}. exchangeCardValue is the balance ` +
  "times the product line's rate; a balance outside the product line's range fails with " +
  `${code("exchange.card.value.out.of.range")}. Durations are at ${code("--time-scale")} 1.`,
  "",
  table(
    ["card", "scenario", "ends", "takes"],
    Scenarios.table.map((row) => [cards(row.cards), row.scenario, row.outcome, row.duration])
  )
].join("\n")
