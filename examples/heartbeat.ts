/**
 * heartbeat: check that the service can be reached with the configured credentials.
 *
 *   pnpm example heartbeat
 *
 * The client reads its configuration from the GCX_* variables (`pnpm example` points them at an
 * embedded sandbox when none is set) and leaves HTTP to the caller: here, gcx's undici client (`UndiciClient.layer`).
 */
import { NodeRuntime } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { Console, Duration, Effect, Option } from "effect"

const program = Effect.gen(function*() {
  const client = yield* ExchangeClient.ExchangeClient
  // Gets a token (cached for its lifetime), then GETs /exchange/v3/heartbeat.
  const result = yield* client.heartbeat
  yield* Console.log(
    `the service answered HTTP ${result.httpStatus} in ${Duration.format(result.latency)}` +
      ` (trace ${Option.getOrElse(result.traceId, () => "none")})`
  )
})

program.pipe(
  Effect.provide(ExchangeClient.layerConfig()),
  Effect.provide(UndiciClient.layer),
  NodeRuntime.runMain
)
