import { fileURLToPath } from "node:url"
import { mergeConfig, type ViteUserConfig } from "vitest/config"
import shared from "../vitest.shared.js"

/**
 * The reliability suite (`pnpm test:chaos`): chaos, fuzz, secrets and sandbox
 * hardening, against sandboxes in their own processes. CI runs it with
 * CI=true, which shrinks the chaos run to 200 quotes.
 */
const config: ViteUserConfig = {
  test: {
    name: "reliability",
    root: fileURLToPath(new URL(".", import.meta.url)),
    include: ["reliability/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000
  }
}

export default mergeConfig(shared, config)
