/** Shared helpers of the reliability suite: a sandbox process for the life of a test file. */
import { afterAll, beforeAll } from "@effect/vitest"
import type { Sandbox } from "@gcx/sandbox"
import * as SandboxProcess from "../internal/SandboxProcess.js"

/** Starts a sandbox process before the file's tests and stops it after them; `get` returns it. */
export const sandboxProcess = (options: ReadonlyArray<Sandbox.SandboxOptions> = [{}]) => {
  let running: SandboxProcess.SandboxProcess | undefined
  beforeAll(async () => {
    running = await SandboxProcess.start(options)
  })
  afterAll(async () => {
    await running?.stop()
  })
  return {
    get: (): SandboxProcess.SandboxProcess => {
      if (running === undefined) throw new Error("the sandbox process is not running")
      return running
    }
  }
}
