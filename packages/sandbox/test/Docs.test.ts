/**
 * What a newcomer needs on the `/docs` page to "Try it out", over real HTTP:
 * the test partners' credentials, the product lines and the scenario cards,
 * in the document's description (which Swagger UI shows at the top of the
 * page), each from the sandbox's own definitions. And the icon every page
 * asks for, served rather than a 404.
 */
import { expect, layer } from "@effect/vitest"
import { Routes } from "@gcx/core"
import { Sandbox, Scenarios, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import { call } from "./helpers.js"

/** A row of a Markdown table, as the description writes it. */
const row = (...cells: ReadonlyArray<string>) => `| ${cells.join(" | ")} |`

/** Checks that a description (Markdown) holds the partners, the product lines and every scenario. */
const expectTryItOut = (description: string) => {
  expect(description).toContain("## Try it out")
  expect(description).toContain(Routes.tokenPath)
  for (const partner of TestData.partners) {
    expect(description).toContain(
      row(`\`${partner.clientId}\``, `\`${partner.clientSecret}\``, `\`${partner.apiKey}\``)
    )
  }
  for (const line of TestData.productLines) expect(description).toContain(`| \`${line.id}\` | ${line.name} |`)
  for (const [card, scenario] of Object.entries(Scenarios.byCard)) {
    expect(description).toContain(`| \`${card}\` | ${scenario.name} | `)
  }
  for (const card of Object.values(TestData.Cards)) expect(description).toContain(`\`${card}\``)
  // what a row says, in full
  expect(description).toContain(row("`6006000000000001`", "success", "completed, balance $100.00", "about 2 s"))
  expect(description).toContain(
    row(
      "`6006000000000035`",
      "invalid",
      "failed, exchange.invalid.card: The merchant did not accept the card number or PIN",
      "about 1 s"
    )
  )
  expect(description).toContain(`| any, PIN ${TestData.rejectedPin} | rejectedPin | failed, exchange.invalid.card`)
  expect(description).toContain("| any other | derived | completed, a balance derived from the card number")
}

layer(Sandbox.layer({ timeScale: 0.01, logLevel: "None" }), { excludeTestServices: true })("docs page", (it) => {
  it.effect("/openapi.json describes the test partners, the product lines and the scenario cards", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const reply = yield* call(`${server.baseUrl}/openapi.json`)
      expect(reply.status).toBe(200)
      expectTryItOut(reply.body.info.description)
    }))

  it.effect("/docs embeds that description in the page", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const reply = yield* call(`${server.baseUrl}/docs`)
      expect(reply.status).toBe(200)
      const embedded = /<script id="swagger-spec" type="application\/json">([\s\S]*?)<\/script>/.exec(reply.text)
      expect(embedded).not.toBeNull()
      expectTryItOut(JSON.parse(embedded![1]!).info.description)
    }))

  it.effect("/favicon.ico is an SVG icon, not a 404", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const reply = yield* call(`${server.baseUrl}/favicon.ico`)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toBe("image/svg+xml")
      expect(reply.text).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>$/)
    }))
})
