import * as Context from "effect/Context"
import type * as LogLevel from "effect/LogLevel"
import type { Partner, ProductLine } from "../TestData.js"

/** The resolved options of one sandbox, shared by its handlers and middleware. */
export class SandboxConfig extends Context.Service<SandboxConfig, {
  readonly stage: string
  readonly timeScale: number
  readonly adminKey: string
  /** The `Host` names served besides the server's bound address (see `hosts.served`). */
  readonly hosts: ReadonlyArray<string>
  readonly partners: ReadonlyArray<Partner>
  readonly productLines: ReadonlyArray<ProductLine>
  /** How many dashboard event streams may be open at once. */
  readonly maxDashboardStreams: number
  /** The level each request is logged at. */
  readonly requestLogLevel: LogLevel.LogLevel
}>()("@gcx/sandbox/internal/SandboxConfig") {}
