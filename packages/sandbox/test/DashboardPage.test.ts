/**
 * The dashboard's page ships as a module (`src/internal/dashboardPage.ts`), generated from
 * `src/dashboard/index.html`: this test fails while the two differ. To refresh the module after
 * editing the page: `GCX_WRITE_DASHBOARD=1 pnpm vitest run packages/sandbox/test/DashboardPage.test.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import { page } from "../src/internal/dashboardPage.js"

const html = new URL("../src/dashboard/index.html", import.meta.url)
const module = new URL("../src/internal/dashboardPage.ts", import.meta.url)

describe("dashboard page module", () => {
  it("holds the HTML of src/dashboard/index.html", () => {
    const source = fs.readFileSync(html, "utf8")
    if (process.env.GCX_WRITE_DASHBOARD === "1" && source !== page) {
      const text = fs.readFileSync(module, "utf8")
      const start = text.indexOf("export const page: string =")
      fs.writeFileSync(module, `${text.slice(0, start)}export const page: string = ${JSON.stringify(source)}\n`)
    }
    expect(page, "regenerate with GCX_WRITE_DASHBOARD=1 (see the test's doc)").toBe(source)
  })
})
