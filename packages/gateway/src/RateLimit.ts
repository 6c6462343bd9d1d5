/**
 * Per-caller rate limits of the gateway: a token bucket per API key, in this
 * gateway's memory (each gateway behind a load balancer limits on its own).
 *
 * CONTRACT (lead, 2026-11-25): the service's shape is fixed; the
 * implementation belongs to the api-keys engineer.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ApiKey } from "./ApiKeys.js"

/** The caller has spent its burst: retry after `retryAfterSeconds` (the `Retry-After` header). */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  retryAfterSeconds: Schema.Number
}) {
  override get message(): string {
    return `rate limit exceeded: retry after ${this.retryAfterSeconds} s`
  }
}

/** The rate limit service. */
export interface Service {
  /** Takes one request from the caller's bucket, or fails with `RateLimited`. */
  readonly take: (key: ApiKey) => Effect.Effect<void, RateLimited>
}

/** The rate limit service. */
export class RateLimit extends Context.Service<RateLimit, Service>()("@gcx/gateway/RateLimit") {}
