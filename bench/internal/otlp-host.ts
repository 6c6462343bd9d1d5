/**
 * The child process that hosts a no-op OTLP/HTTP receiver (`OtlpReceiver`,
 * keeping nothing) for row 1's telemetry side, so that the collector's work
 * is not counted as the client's, as in a deployment where the collector
 * runs apart. Prints `READY <url>` and runs until SIGTERM or SIGINT.
 *
 * Usage: node --import tsx bench/internal/otlp-host.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import * as Effect from "effect/Effect"

const main = Effect.gen(function*() {
  const receiver = yield* OtlpReceiver.make({ discard: true })
  yield* Effect.sync(() => process.stdout.write(`READY ${receiver.url}\n`))
  return yield* Effect.never
}).pipe(Effect.scoped)

NodeRuntime.runMain(main)
