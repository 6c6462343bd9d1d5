import type { ViteUserConfig } from "vitest/config"

/**
 * The export condition under which every `@gcx/*` package resolves to its TypeScript source
 * (see docs/contributing.md): tests run the sources, never a stale `dist/`.
 */
const sourceCondition = "@gcx/source"

/** `NODE_OPTIONS` for the processes the tests start (`node --import tsx ...`): the same condition. */
const conditionFlag = `--conditions=${sourceCondition}`
const inherited = process.env.NODE_OPTIONS ?? ""
const nodeOptions = inherited.includes(conditionFlag) ? inherited : `${inherited} ${conditionFlag}`.trim()

/** Settings shared by every package's vitest project. */
const config: ViteUserConfig = {
  esbuild: { target: "es2022" },
  resolve: { conditions: [sourceCondition, "module", "node", "development|production"] },
  ssr: { resolve: { conditions: [sourceCondition, "node", "development|production"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    sequence: { concurrent: false },
    env: { NODE_OPTIONS: nodeOptions }
  }
}

export default config
