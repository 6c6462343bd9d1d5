import { fileURLToPath } from "node:url"
import type { ViteUserConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

/** The multi-runner proof (`pnpm test:cluster`): child processes on a throwaway PostgreSQL; not part of `pnpm test`. */
const config: ViteUserConfig = {
  test: {
    name: "cluster",
    root: fileURLToPath(new URL(".", import.meta.url)),
    include: ["test/cluster/**/*.proof.ts"],
    testTimeout: 20 * 60_000,
    hookTimeout: 120_000
  }
}

// spread, not mergeConfig: mergeConfig would add the shared `include` (every *.test.ts) to ours
export default { ...shared, test: { ...shared.test, ...config.test } } satisfies ViteUserConfig
