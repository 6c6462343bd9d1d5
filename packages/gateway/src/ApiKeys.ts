/**
 * The gateway's callers: API keys, kept in the deployment's database as
 * SHA-256 hashes only, each with its rate limit and its webhook endpoints.
 *
 * CONTRACT (lead, 2026-11-25): the service's shape is fixed; the
 * implementation (`make`, `layer`, the tables, the CLI) belongs to the
 * api-keys engineer.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

/** An endpoint that receives the terminal outcomes of a key's quotes. */
export interface WebhookEndpoint {
  readonly id: string
  readonly url: string
  /** The secret that signs its deliveries (`Gcx-Signature`). */
  readonly secret: Redacted.Redacted<string>
}

/** A caller, as authenticated: never the key itself. */
export interface ApiKey {
  /** A public id (`key_…`), safe to log. */
  readonly id: string
  readonly name: string
  /** Sustained requests a second, and the burst above it. */
  readonly ratePerSecond: number
  readonly burst: number
  readonly webhooks: ReadonlyArray<WebhookEndpoint>
}

/** The presented key is missing, malformed, unknown or revoked. Never names the key. */
export class UnknownApiKey extends Schema.TaggedError<UnknownApiKey>()("UnknownApiKey", {}) {
  override get message(): string {
    return "the API key is missing, unknown or revoked"
  }
}

/** The API keys service. */
export interface Service {
  /** The caller a presented key belongs to. */
  readonly authenticate: (presented: Redacted.Redacted<string>) => Effect.Effect<ApiKey, UnknownApiKey>
  /** A caller by its public id (for webhook delivery), revoked ones included. */
  readonly find: (id: string) => Effect.Effect<Option.Option<ApiKey>>
}

/** The API keys service. */
export class ApiKeys extends Context.Service<ApiKeys, Service>()("@gcx/gateway/ApiKeys") {}
