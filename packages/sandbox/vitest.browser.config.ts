import type { ViteUserConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

/**
 * The sandbox's browser tests (`pnpm test:browser`): the dashboard and the
 * docs page in Debian's Chromium, driven by playwright-core. Kept out of the
 * `sandbox` project, so that `pnpm test` needs no browser.
 */
const config: ViteUserConfig = {
  ...shared,
  test: {
    ...shared.test,
    name: "sandbox-browser",
    root: import.meta.dirname,
    include: ["test/browser/**/*.browser.ts"],
    testTimeout: 60_000
  }
}

export default config
