import type { ViteUserConfig } from "vitest/config"

/** Settings shared by every package's vitest project. */
const config: ViteUserConfig = {
  esbuild: { target: "es2022" },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    sequence: { concurrent: false }
  }
}

export default config
