import type { ViteUserConfig } from "vitest/config"
import shared from "../vitest.shared.js"

/**
 * The examples' browser tests (part of `pnpm test:browser`): the checkout page
 * (examples/checkout/) in Debian's Chromium, driven by playwright-core, against
 * a real `gcx serve`. Kept out of the `snippets` project, so that `pnpm test`
 * needs no browser.
 */
const config: ViteUserConfig = {
  ...shared,
  test: {
    ...shared.test,
    name: "examples-browser",
    root: import.meta.dirname,
    include: ["test/browser/**/*.browser.ts"],
    testTimeout: 120_000,
    hookTimeout: 60_000
  }
}

export default config
