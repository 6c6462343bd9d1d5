/**
 * The checkout example (examples/checkout/) in Debian's Chromium, driven by
 * playwright-core: its backend (server.ts, in this process) in front of a real
 * `gcx serve` (a separate process, embedded) and a sandbox. The page submits a
 * sandbox test card, its bar moves with the quote's events (EventSource), and
 * it shows the outcome; no card data stays in the page and no key reaches the
 * browser; a refused card shows the merchant's message. Saves `examples/checkout/test-artifacts/checkout.png`
 * (and the bar on its way, and the refused card; gitignored).
 */
import { afterAll, beforeAll, expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as Fs from "node:fs"
import type { Browser, Page } from "playwright-core"
import { chromium } from "playwright-core"
import * as Checkout from "../../checkout/server.js"
import { startGateway } from "../utils/gateway.js"

const artifacts = new URL("../../checkout/test-artifacts/", import.meta.url)

let browser: Browser

beforeAll(async () => {
  Fs.mkdirSync(artifacts, { recursive: true })
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
})

/** What the page showed and sent while it ran. */
interface Run {
  readonly bar: ReadonlyArray<number>
  readonly fieldsAfterSubmit: ReadonlyArray<string>
  readonly status: string
  readonly outcome: ReadonlyArray<string>
  readonly html: string
  readonly sent: ReadonlyArray<string>
  readonly problems: ReadonlyArray<string>
}

/**
 * Opens the page, submits `card`, waits for the outcome; saves `<name>.png` (the outcome) and
 * `<name>-progress.png` (the bar on its way).
 */
const checkout = (url: string, card: string, pin: string, name: string): Effect.Effect<Run> =>
  Effect.promise(async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page: Page = await context.newPage()
    const problems: Array<string> = []
    const sent: Array<string> = []
    page.on("console", (message) => message.type() === "error" && problems.push(message.text()))
    page.on(
      "response",
      (response) => response.status() >= 400 && problems.push(`${response.status()} ${response.url()}`)
    )
    page.on("request", (request) => sent.push(`${request.url()} ${JSON.stringify(request.headers())}`))
    try {
      await page.goto(url)
      // every value the bar takes, as it takes it
      await page.evaluate(() => {
        const bar = document.getElementById("progress") as HTMLProgressElement
        const values: Array<number> = []
        Object.assign(window, { barValues: values })
        new MutationObserver(() => values.push(bar.value)).observe(bar, { attributes: true })
      })
      await page.getByLabel("Card number", { exact: true }).fill(card)
      await page.getByLabel("PIN", { exact: true }).fill(pin)
      await page.getByLabel("Merchant", { exact: true }).selectOption(TestData.defaultProductLineId)
      await page.getByRole("button", { name: "Check the card" }).click()
      const fieldsAfterSubmit = [
        await page.getByLabel("Card number", { exact: true }).inputValue(),
        await page.getByLabel("PIN", { exact: true }).inputValue()
      ]
      await page.waitForFunction(() => {
        const value = (document.getElementById("progress") as HTMLProgressElement).value
        return value > 0 && value < 100
      })
      await page.screenshot({ path: new URL(`${name}-progress.png`, artifacts).pathname, fullPage: true })
      const status = page.getByRole("status")
      await page.locator("#status.completed, #status.failed").waitFor({ timeout: 60_000 })
      await page.screenshot({ path: new URL(`${name}.png`, artifacts).pathname, fullPage: true })
      return {
        bar: await page.evaluate(() => (window as unknown as { barValues: Array<number> }).barValues),
        fieldsAfterSubmit,
        status: await status.innerText(),
        outcome: await status.locator("dt, dd").allInnerTexts(),
        html: await page.content(),
        sent,
        problems
      }
    } finally {
      await context.close()
    }
  })

/**
 * A page of another site (`http://attacker.test`, served by Playwright) that posts a form to the backend
 * at `target`: a `text/plain` form whose body is JSON, the classic CSRF that needs no CORS. Gives the
 * backend's status and the `Origin` the browser sent.
 */
const crossSite = (target: string, card: string): Effect.Effect<{ readonly status: number; readonly origin: string }> =>
  Effect.promise(async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    try {
      const name = JSON.stringify({ cardNumber: card, pinNumber: "7391", productLineId: TestData.defaultProductLineId })
        .replace(/}$/, ",\"x\":\"")
      await page.route("http://attacker.test/**", (route) =>
        route.fulfill({
          contentType: "text/html",
          body: `<form method="post" enctype="text/plain" action="${target}/api/quotes">` +
            `<input type="hidden" name='${name}' value='"}'></form>`
        }))
      await page.goto("http://attacker.test/")
      const [answer] = await Promise.all([
        page.waitForResponse(`${target}/api/quotes`),
        page.locator("form").evaluate((form: HTMLFormElement) => form.submit())
      ])
      return { status: answer.status(), origin: (await answer.request().allHeaders()).origin ?? "" }
    } finally {
      await context.close()
    }
  })

// time scale 1: the success card takes about 2 s, long enough for the bar to move
layer(Sandbox.layer({ logLevel: "None" }), { excludeTestServices: true, timeout: 120_000 })(
  "the checkout page",
  (it) => {
    it.effect("submits a test card, moves the bar with the events, shows the values; no card or key in the page", () =>
      Effect.gen(function*() {
        const sandbox = yield* Sandbox.SandboxServer
        const gateway = yield* startGateway(sandbox)
        const backend = yield* Effect.acquireRelease(
          Effect.promise(() => Checkout.start({ gatewayUrl: gateway.url, apiKey: gateway.apiKey })),
          (backend) => Effect.sync(() => backend.close())
        )
        const card = TestData.Cards.success
        const pin = "7391"
        const run = yield* checkout(backend.url, card, pin, "checkout")

        expect(run.problems).toEqual([])
        expect(run.fieldsAfterSubmit).toEqual(["", ""])
        expect(run.status).toContain("The card was checked.")
        expect(run.outcome).toEqual(["Balance", "100.00", "We offer", "85.00"])
        // the bar moved: from 0, through at least one value on the way, to 100
        expect(run.bar.at(-1)).toBe(100)
        expect(run.bar.some((value) => value > 0 && value < 100), `bar values ${run.bar}`).toBe(true)
        // nothing of the card stays in the page; the key never reaches the browser
        expect(run.html).not.toContain(card)
        expect(run.html).not.toContain(pin)
        expect(run.sent.join("\n")).not.toContain(gateway.apiKey)
        expect(run.sent.join("\n")).not.toContain("gcx_sk_")
        expect(Fs.existsSync(new URL("checkout.png", artifacts))).toBe(true)

        // a refused card: the customer's message of the merchant, nothing else
        const refused = yield* checkout(backend.url, TestData.Cards.zeroBalance, pin, "checkout-refused")
        expect(refused.problems).toEqual([])
        expect(refused.status).toBe("This card has no remaining balance.")
        expect(refused.outcome).toEqual([])
        expect(refused.html).not.toContain(TestData.Cards.zeroBalance)

        // another site's page cannot submit a card through the backend (its key), even as a text/plain form
        const forged = yield* crossSite(backend.url, TestData.Cards.instant)
        expect(forged).toEqual({ status: 403, origin: "http://attacker.test" })
      }))
  }
)
