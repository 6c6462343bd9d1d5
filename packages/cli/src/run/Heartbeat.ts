/**
 * `gcx heartbeat`: checks that the service can be reached with the
 * configured credentials, and prints the answer and the round-trip time.
 * Its flags are in `commands/Heartbeat`.
 */
import type * as Errors from "@gcx/core/Errors"
import * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Connection from "../Connection.js"
import * as Reachability from "../Reachability.js"
import * as Text from "../Text.js"

/**
 * Calls the heartbeat and prints one line: the status, the round trip of the
 * heartbeat request, and the total time including the token request. With
 * `json`, the same as one JSON object.
 */
export const run = (
  options: { readonly json: boolean }
): Effect.Effect<
  void,
  ExchangeClient.ClientError | Errors.TokenError,
  ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig
> =>
  Effect.gen(function*() {
    const client = yield* ExchangeClient.ExchangeClient
    const config = yield* ExchangeConfig.ExchangeConfig
    const startedAt = yield* Clock.currentTimeMillis
    const result = yield* client.heartbeat
    const totalMillis = (yield* Clock.currentTimeMillis) - startedAt
    const roundTripMillis = Duration.toMillis(result.latency)
    const traceId = Option.getOrUndefined(result.traceId)
    if (options.json) {
      return yield* Console.log(Text.json({
        ok: true,
        httpStatus: result.httpStatus,
        baseUrl: config.baseUrl,
        roundTripMillis,
        totalMillis,
        attempts: result.attempts,
        requestId: result.requestId,
        ...(traceId === undefined ? {} : { traceId })
      }))
    }
    yield* Console.log(Text.safe(
      `heartbeat OK: HTTP ${result.httpStatus} from ${config.baseUrl} in ${roundTripMillis} ms` +
        ` (${totalMillis} ms with the token request${result.attempts > 1 ? `, ${result.attempts} attempts` : ""})` +
        (traceId === undefined ? "" : `, trace ${traceId}`)
    ))
  })

/** What `gcx heartbeat` is given: its flags (`commands/Heartbeat`). */
export interface Flags {
  readonly json: boolean
  readonly connection: Connection.Flags
}

/** The `heartbeat` command's handler: the heartbeat on the connection the flags give. */
export const handler = ({ connection, json }: Flags) =>
  run({ json }).pipe(Reachability.explain, Effect.provide(Connection.layer(connection)))
