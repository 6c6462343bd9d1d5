import { mergeConfig, type ViteUserConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

const config: ViteUserConfig = {
  test: { name: "workflow" }
}

export default mergeConfig(shared, config)
