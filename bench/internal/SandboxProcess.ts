/**
 * Sandboxes in a separate process (`sandbox-host.ts`): started with their
 * options, read from the `READY` line, and stopped at the end, also when the
 * caller fails or the bench process exits.
 */
import type { Sandbox } from "@gcx/sandbox"
import * as Effect from "effect/Effect"
import * as Host from "./host.js"
import { inBench } from "./paths.js"

/** The address of one running sandbox. */
export interface Endpoint {
  readonly baseUrl: string
  readonly authUrl: string
  readonly stage: string
  readonly adminKey: string
}

/** A running host process and the sandboxes it serves. */
export interface SandboxProcess {
  readonly pid: number
  readonly endpoints: ReadonlyArray<Endpoint>
  /** The first (often the only) sandbox. */
  readonly endpoint: Endpoint
  /** Stops the process: SIGTERM, then SIGKILL if it has not exited after 5 s. */
  readonly stop: () => Promise<void>
}

const host = inBench("internal", "sandbox-host.ts")

/** Starts one host process serving a sandbox per entry of `options`. */
export const start = async (
  options: ReadonlyArray<Sandbox.SandboxOptions> = [{}],
  hostOptions: Host.Options = {}
): Promise<SandboxProcess> => {
  const started = await Host.start("the sandbox host", host, [JSON.stringify(options)], hostOptions)
  const endpoints = JSON.parse(started.ready) as ReadonlyArray<Endpoint>
  return { pid: started.pid, endpoints, endpoint: endpoints[0]!, stop: started.stop }
}

/** A host process for the life of the current scope. */
export const scoped = (options: ReadonlyArray<Sandbox.SandboxOptions> = [{}], hostOptions: Host.Options = {}) =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => start(options, hostOptions), catch: (error) => error as Error }),
    (process) => Effect.promise(() => process.stop())
  )
