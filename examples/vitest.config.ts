import { mergeConfig, type ViteUserConfig } from "vitest/config"
import shared from "../vitest.shared.js"

/**
 * The doc-snippet test (every runnable block of README.md and docs/, test/Snippets.test.ts) and the
 * gateway's Python client against `gcx serve` (test/GatewayPython.test.ts).
 */
const config: ViteUserConfig = {
  test: { name: "snippets" }
}

export default mergeConfig(shared, config)
