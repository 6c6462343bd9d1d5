/**
 * Whether the gateway is ready (`/readyz`): the database answers a query, and
 * the service's heartbeat answered within the last `window` (30 s). The
 * heartbeat is sent every `interval` (10 s) by one fiber of the gateway, not
 * per request. Its changes are logged for the operator: a warning when it
 * stops answering (the first failure, with its reason), and a line when it
 * answers again; nothing while it stays the same.
 */
import * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as SqlClient from "effect/sql/SqlClient"
import type { Readiness as State } from "../GatewayApi.js"

/** Settings of the readiness checks. */
export interface Options {
  /** How often the heartbeat is sent. Default 10 s. */
  readonly interval?: Duration.Input | undefined
  /** How recent the last answered heartbeat must be. Default 30 s. */
  readonly window?: Duration.Input | undefined
}

/** The readiness service. */
export class Readiness extends Context.Service<Readiness, {
  readonly check: Effect.Effect<State>
}>()("@gcx/gateway/internal/Readiness") {}

/** The readiness checks, with the heartbeat fiber running for the layer's lifetime. */
export const layer = (options: Options = {}) =>
  Layer.effect(
    Readiness,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const client = yield* ExchangeClient.ExchangeClient
      const window = Duration.toMillis(options.window ?? "30 seconds")
      let answeredAt = Number.NEGATIVE_INFINITY
      /** Whether the last heartbeat failed (none sent yet: it did not). */
      let failing = false
      const beat = client.heartbeat.pipe(
        Effect.andThen(Clock.currentTimeMillis),
        Effect.tap((now) =>
          Effect.suspend(() => {
            answeredAt = now
            if (!failing) return Effect.void
            failing = false
            return Effect.logInfo("gateway: the service's heartbeat answers again")
          })
        ),
        Effect.catch((error) =>
          Effect.suspend(() => {
            if (failing) return Effect.void
            failing = true
            return Effect.logWarning(
              `gateway: the service's heartbeat failed (${error._tag}: ${error.message}); /readyz says not ready ` +
                "once it has not answered for the readiness window"
            )
          })
        ),
        Effect.ignore
      )
      yield* Effect.forkScoped(Effect.repeat(beat, Schedule.spaced(options.interval ?? "10 seconds")))
      const database = sql`SELECT 1`.pipe(
        Effect.as("ok" as const),
        Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.succeed("failing" as const) }),
        Effect.catch(() => Effect.succeed("failing" as const))
      )
      const check = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const service = now - answeredAt <= window ? "ok" as const : "failing" as const
        const db = yield* database
        return { status: db === "ok" && service === "ok" ? "ready" : "not_ready", database: db, service } as const
      })
      return Readiness.of({ check })
    })
  )
