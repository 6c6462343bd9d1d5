/**
 * The docs page and the dashboard in a real browser: Debian's Chromium
 * (`/usr/bin/chromium`, no browser download) driven by playwright-core,
 * against a real sandbox, in a 1,280 × 800 window. A screenshot of each page is saved under
 * `packages/sandbox/test-artifacts/` (gitignored), `dashboard-1280x800.png` among them (the
 * window as a person sees it). Run with `pnpm test:browser`.
 */
import { afterAll, beforeAll, expect, layer } from "@effect/vitest"
import { ErrorBody, Routes } from "@gcx/core"
import { Sandbox, Scenarios, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as fs from "node:fs"
import type { Browser, Page } from "playwright-core"
import { chromium } from "playwright-core"
import { call, exchangeHeaders, postQuote, quoteBody, tokenFor } from "../helpers.js"

const artifacts = new URL("../../test-artifacts/", import.meta.url)

let browser: Browser

beforeAll(async () => {
  fs.mkdirSync(artifacts, { recursive: true })
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
})

/** The window of the proof: a 1,280 × 800 laptop screen. */
const viewport = { width: 1280, height: 800 }

/** Runs `use` with a fresh page (its own tab, so its own sessionStorage), closed afterwards. */
const withPage = <A>(use: (page: Page) => Promise<A>): Effect.Effect<A> =>
  Effect.promise(async () => {
    const context = await browser.newContext({ viewport })
    const page = await context.newPage()
    try {
      return await use(page)
    } finally {
      await context.close()
    }
  })

const screenshot = (page: Page, name: string, fullPage = true) =>
  page.screenshot({ path: new URL(`${name}.png`, artifacts).pathname, fullPage })

/** What went wrong while a page loaded: console errors (a 404 favicon is one) and answers of 400 or more. */
const watchProblems = (page: Page): Array<string> => {
  const problems: Array<string> = []
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`)
  })
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`)
  })
  return problems
}

/** Opens the dashboard and gives it the key through its form. */
const openDashboard = async (page: Page, baseUrl: string, key: string) => {
  await page.goto(`${baseUrl}/__sandbox/ui`)
  await page.getByRole("textbox", { name: /Admin key/ }).fill(key)
  await page.getByRole("button", { name: "Connect" }).click()
}

// time scale 0.5: the success card takes about 1 s, long enough to see it move
layer(Sandbox.layer({ timeScale: 0.5 }), { excludeTestServices: true })("in Chromium", (it) => {
  it.effect("/docs lists the four operations of the spec, the test partners and the scenario cards", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const { intro, paths, problems } = yield* withPage(async (page) => {
        const problems = watchProblems(page)
        await page.goto(`${server.baseUrl}/docs`)
        await page.locator(".opblock-summary-path").first().waitFor({ timeout: 20_000 })
        await screenshot(page, "docs")
        return {
          paths: await page.locator(".opblock-summary-path").evaluateAll((elements) =>
            elements.map((element) => element.getAttribute("data-path"))
          ),
          // Swagger UI renders the description's Markdown tables as tables: one text per row
          intro: await page.locator(".information-container .description tr").evaluateAll((rows) =>
            rows.map((row) => (row as HTMLElement).innerText.replace(/\s+/g, " ").trim())
          ),
          problems
        }
      })
      expect(problems).toEqual([])
      expect(intro).toContain(
        `${TestData.partner.clientId} ${TestData.partner.clientSecret} ${TestData.partner.apiKey}`
      )
      for (const [card, scenario] of Object.entries(Scenarios.byCard)) {
        expect(intro.some((row) => row.startsWith(`${card} ${scenario.name} `)), card).toBe(true)
      }
      const quote = Routes.quotePath()
      expect(paths).toEqual(expect.arrayContaining([
        Routes.tokenPath,
        Routes.heartbeatPath,
        quote,
        `${quote}/{transactionId}`
      ]))
    }))

  it.effect("with a wrong key the dashboard shows the refusal and keeps nothing", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const { message, stored, url } = yield* withPage(async (page) => {
        await openDashboard(page, server.baseUrl, "not-the-key")
        const alert = page.locator("#key-message")
        await expect.poll(() => alert.textContent(), { timeout: 5_000 }).toContain("refused")
        await screenshot(page, "dashboard-refused")
        return {
          message: await alert.textContent(),
          stored: await page.evaluate(() => sessionStorage.length),
          url: page.url()
        }
      })
      expect(message).toContain("403")
      expect(stored).toBe(0)
      expect(url).not.toContain("not-the-key")
    }))

  it.effect("with the right key, quotes created through the API appear, newest first, and reach 100 % within 5 s", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      const token = yield* tokenFor(server)
      const result = yield* withPage(async (page) => {
        await openDashboard(page, server.baseUrl, server.adminKey)
        await page.locator("#live").waitFor({ state: "visible", timeout: 5_000 })
        const created = await Effect.runPromise(
          postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.success))
        )
        const row = page.locator(`tr[data-transaction-id="${created.body.transactionId}"]`)
        await row.waitFor({ timeout: 5_000 })
        const startedAt = Date.now()
        await expect.poll(() => row.locator(".percent").textContent(), { timeout: 5_000, interval: 100 })
          .toContain("100 %")
        const millis = Date.now() - startedAt
        // The page got a snapshot when it connected; since then, deltas only: a newer quote goes on top.
        const newer = await Effect.runPromise(
          postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.instant))
        )
        await page.locator(`tr[data-transaction-id="${newer.body.transactionId}"]`).waitFor({ timeout: 5_000 })
        await page.locator("#journal tr", { hasText: "createQuote" }).nth(1).waitFor({ timeout: 5_000 })
        const order = await page.locator("#transactions tr").evaluateAll((rows) =>
          rows.map((row) => (row as HTMLElement).dataset.transactionId)
        )
        await screenshot(page, "dashboard-live")
        return {
          order,
          ids: [newer.body.transactionId, created.body.transactionId],
          millis,
          state: await row.locator(".state").textContent(),
          text: await row.textContent(),
          stored: await page.evaluate(() => sessionStorage.getItem("gcx-sandbox-admin-key")),
          url: page.url()
        }
      })
      expect(result.order).toEqual(result.ids)
      expect(result.millis).toBeLessThan(5_000)
      expect(result.state).toContain("completed")
      expect(result.text).toContain("****0001")
      expect(result.text).not.toContain(TestData.Cards.success)
      expect(result.stored).toBe(server.adminKey)
      expect(result.url).not.toContain(server.adminKey)
    }))

  it.effect("a 503 fault added from the page shows on the next POST's journal line; a bad rule gets a message", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      const token = yield* tokenFor(server)
      const headers = exchangeHeaders(token)
      const result = yield* withPage(async (page) => {
        await openDashboard(page, server.baseUrl, server.adminKey)
        await page.locator("#live").waitFor({ state: "visible", timeout: 5_000 })
        // bad input: a probability that is not a number
        await page.getByRole("combobox", { name: "Which requests" }).selectOption("probability")
        await page.getByRole("textbox", { name: "N, p or sequence" }).fill("often")
        await page.getByRole("button", { name: "Add the rule" }).click()
        const message = page.locator("#fault-message")
        await expect.poll(() => message.textContent(), { timeout: 5_000 }).toContain("not changed")
        const refusal = await message.textContent()
        // a good one, with the keyboard
        await page.getByRole("combobox", { name: "Route" }).selectOption("createQuote")
        await page.getByRole("combobox", { name: "Kind" }).selectOption("status503")
        await page.getByRole("combobox", { name: "Which requests" }).selectOption("every")
        await page.getByRole("textbox", { name: "N, p or sequence" }).fill("")
        await page.getByRole("textbox", { name: /Retry-After/ }).fill("1")
        await page.getByRole("button", { name: "Add the rule" }).focus()
        await page.keyboard.press("Enter")
        await page.locator("#faults tr").first().waitFor({ timeout: 5_000 })
        const answer = await Effect.runPromise(postQuote(server, headers, quoteBody(TestData.Cards.success)))
        const line = page.locator("#journal tr", { hasText: headers.requestId! })
        await line.waitFor({ timeout: 5_000 })
        await screenshot(page, "dashboard-fault")
        const lineText = await line.textContent()
        await page.getByRole("button", { name: "Remove the rule createQuote status503" }).click()
        await expect.poll(() => page.locator("#faults tr").count(), { timeout: 5_000 }).toBe(0)
        return { refusal, status: answer.status, lineText }
      })
      expect(result.refusal).toMatch(/400: .*probability/)
      expect(result.status).toBe(503)
      expect(result.lineText).toContain("createQuote")
      expect(result.lineText).toContain("503")
      expect(result.lineText).toContain("status503")
      expect(yield* server.journal.pipe(Effect.map((journal) => journal.entries.at(-1)?.faults))).toBeUndefined()
      // the rule is gone: the next POST is answered
      expect((yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.success))).status).toBe(201)
    }))

  it.effect("a partner disabled from the page gets its next request refused; enabled again, it is served", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      const token = yield* tokenFor(server)
      const heartbeat = () =>
        Effect.runPromise(call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) }))
      const result = yield* withPage(async (page) => {
        await openDashboard(page, server.baseUrl, server.adminKey)
        await page.locator("#live").waitFor({ state: "visible", timeout: 5_000 })
        await page.getByRole("button", { name: `Disable ${TestData.partner.clientId}` }).click()
        const row = page.locator(`#partners tr[data-client-id="${TestData.partner.clientId}"]`)
        await expect.poll(() => row.textContent(), { timeout: 5_000 }).toContain("disabled")
        const refused = await heartbeat()
        await page.locator("#journal tr", { hasText: Routes.heartbeatPath }).first().waitFor({ timeout: 5_000 })
        await screenshot(page, "dashboard-partner-disabled")
        await page.getByRole("button", { name: `Enable ${TestData.partner.clientId}` }).click()
        await expect.poll(() => row.textContent(), { timeout: 5_000 }).toContain("enabled")
        return { refused, served: await heartbeat() }
      })
      expect(result.refused.status).toBe(400)
      expect(result.refused.body.ErrorCode).toBe(ErrorBody.ErrorCodes.partnerNotFound)
      expect(result.served.status).toBe(200)
    }))

  it.effect("the banner's link (key in the fragment) connects at once; the page keeps the key in the tab, not in the URL", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const url = Sandbox.dashboardUrl(server)
      expect(url).toContain("#key=")
      const result = yield* withPage(async (page) => {
        const requested: Array<string> = []
        page.on("request", (request) => requested.push(request.url()))
        await page.goto(url)
        await page.locator("#live").waitFor({ state: "visible", timeout: 5_000 })
        return {
          stored: await page.evaluate(() => sessionStorage.getItem("gcx-sandbox-admin-key")),
          url: page.url(),
          hash: await page.evaluate(() => location.hash),
          requested
        }
      })
      expect(result.stored).toBe(server.adminKey)
      expect(result.url).toBe(`${server.baseUrl}/__sandbox/ui`)
      expect(result.hash).toBe("")
      // no request carries the key in its URL: the fragment never leaves the browser
      expect(result.requested.length).toBeGreaterThan(0)
      for (const requested of result.requested) expect(requested).not.toContain(server.adminKey)
    }))

  it.effect("at 1,280 × 800: the key's hint until connected, no overflow, money as the CLI shows it, an icon", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      const token = yield* tokenFor(server)
      // long unbroken values: a requestId of the longest length accepted, a path of 200 characters
      yield* server.setFaults([{ route: "heartbeat", kind: "latency", latencyMillis: { min: 1, max: 2 }, times: 1000 }])
      const quoted = yield* postQuote(
        server,
        exchangeHeaders(token, { requestId: "r".repeat(128) }),
        quoteBody(TestData.Cards.success)
      )
      yield* call(`${server.baseUrl}${Routes.quotePath()}/${"x".repeat(200)}`, { headers: exchangeHeaders(token) })
      const result = yield* withPage(async (page) => {
        const problems = watchProblems(page)
        await page.goto(`${server.baseUrl}/__sandbox/ui`)
        const hint = await page.locator("#key-hint").innerText()
        const formShown = await page.locator("#key-form").isVisible()
        const forgetBefore = await page.getByRole("button", { name: "Forget the key" }).isVisible()
        await screenshot(page, "dashboard-key", false)
        await page.getByRole("textbox", { name: /Admin key/ }).fill(server.adminKey)
        await page.getByRole("button", { name: "Connect" }).click()
        await page.locator("#live").waitFor({ state: "visible", timeout: 5_000 })
        const row = page.locator(`tr[data-transaction-id="${quoted.body.transactionId}"]`)
        await expect.poll(() => row.locator(".state").textContent(), { timeout: 5_000, interval: 100 })
          .toContain("completed")
        await page.locator("#journal tr", { hasText: "x".repeat(200) }).waitFor({ timeout: 5_000 })
        await page.locator("#faults tr").first().waitFor({ timeout: 5_000 })
        await screenshot(page, "dashboard-1280x800", false)
        const connected = {
          keySection: await page.locator("#key-section").isVisible(),
          forget: await page.getByRole("button", { name: "Forget the key" }).isVisible(),
          scrollWidth: await page.evaluate(() => document.documentElement.scrollWidth),
          outcome: await row.locator("td").nth(6).textContent(),
          money: await page.evaluate(`[19.7, 100, 85, 0.125, 92.5, 0, 1234567.0001].map(money)`),
          icon: await page.evaluate(async () => {
            const link = document.querySelector<HTMLLinkElement>("link[rel=icon]")
            const response = await fetch(link!.href)
            return `${response.status} ${response.headers.get("content-type")}`
          })
        }
        await page.getByRole("button", { name: "Forget the key" }).click()
        const forgotten = await page.locator("#key-form").isVisible()
        return { hint, formShown, forgetBefore, connected, forgotten, problems }
      })
      // where the key comes from: the banner's link and Admin line, the flag, the variable
      expect(result.hint).toContain("#key=")
      expect(result.hint).toContain("Admin")
      expect(result.hint).toContain("--admin-key")
      expect(result.hint).toContain(Sandbox.adminKeyVariable)
      expect(result.formShown).toBe(true)
      expect(result.forgetBefore).toBe(false)
      // connected: the form is gone, the Forget button stays within reach
      expect(result.connected.keySection).toBe(false)
      expect(result.connected.forget).toBe(true)
      expect(result.connected.scrollWidth).toBeLessThanOrEqual(viewport.width)
      expect(result.connected.outcome).toBe("value 100.00, exchange 85.00")
      // the CLI's rule (@gcx/cli Render.money): at least two decimals, never rounded
      expect(result.connected.money).toEqual(["19.70", "100.00", "85.00", "0.125", "92.50", "0.00", "1234567.0001"])
      expect(result.connected.icon).toBe("200 image/svg+xml")
      expect(result.forgotten).toBe(true)
      // the 404 of the quote path above is the API's answer to a fetch, not the page's
      expect(result.problems).toEqual([])
    }))
})
