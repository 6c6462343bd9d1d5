/**
 * The child process that hosts sandboxes for the bench and the reliability
 * suite, so that client and server never share a process (or its CPU
 * accounting). It starts one sandbox per entry of its JSON argument
 * (`Sandbox.SandboxOptions`), prints `READY <json>` with their addresses on
 * one line, and runs until SIGTERM or SIGINT.
 *
 * Usage: node --import tsx bench/internal/sandbox-host.ts '<json array of SandboxOptions>'
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Sandbox } from "@gcx/sandbox"
import * as Effect from "effect/Effect"

const options = JSON.parse(process.argv[2] ?? "[{}]") as ReadonlyArray<Sandbox.SandboxOptions>

const main = Effect.gen(function*() {
  const servers = yield* Effect.forEach(options, (option) => Sandbox.make({ logLevel: "None", ...option }))
  const ready = servers.map(({ adminKey, authUrl, baseUrl, stage }) => ({ baseUrl, authUrl, stage, adminKey }))
  yield* Effect.sync(() => process.stdout.write(`READY ${JSON.stringify(ready)}\n`))
  return yield* Effect.never
}).pipe(Effect.scoped)

NodeRuntime.runMain(main)
