import { defineConfig } from "vitest/config"

/** `pnpm test:browser`: every suite that drives Debian's Chromium (the sandbox's pages, the checkout example). */
export default defineConfig({
  test: {
    projects: ["packages/sandbox/vitest.browser.config.ts", "examples/vitest.browser.config.ts"]
  }
})
