import { mergeConfig, type ViteUserConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

const config: ViteUserConfig = {
  // Most tests run gcx as a process, several at a time (describe.concurrent): give them room on a busy machine.
  test: { name: "cli", testTimeout: 150_000 }
}

export default mergeConfig(shared, config)
