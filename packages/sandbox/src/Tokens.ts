/**
 * The sandbox's token issuer: signs access tokens under a random per-server
 * key and verifies them against `Clock`. The lifetime can be shortened while
 * the server runs, to test expiry.
 */
import { Ids } from "@gcx/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import { randomBytes } from "node:crypto"
import * as Jwt from "./Jwt.js"
import type { Partner } from "./TestData.js"

/** An issued access token and its lifetime in seconds. */
export interface Issued {
  readonly accessToken: string
  readonly expiresIn: number
}

/** The token issuer of one sandbox. */
export class Tokens extends Context.Tag("@gcx/sandbox/Tokens")<Tokens, {
  readonly issue: (partner: Partner, scope: string) => Effect.Effect<Issued>
  readonly verify: (token: string) => Effect.Effect<Jwt.Claims, Jwt.JwtError>
  readonly lifetimeSeconds: Effect.Effect<number>
  readonly setLifetimeSeconds: (seconds: number) => Effect.Effect<void>
  /** Restores the configured lifetime. */
  readonly reset: Effect.Effect<void>
}>() {}

/** The scope a token carries when the request names none (Cognito style). */
export const defaultScope = (stage: string): string => `gcx-sandbox/exchange/${stage}/full-access`

/** The issuer (`iss`) of every sandbox token. */
export const issuer = "gcx-sandbox"

const nowSeconds = Effect.map(Clock.currentTimeMillis, (millis) => Math.floor(millis / 1000))

/** Builds a token issuer with a fresh random signing key. */
export const make = (options: { readonly lifetimeSeconds: number }): Effect.Effect<Tokens["Type"]> =>
  Effect.gen(function*() {
    const key = randomBytes(32)
    const lifetime = yield* Ref.make(options.lifetimeSeconds)
    return Tokens.of({
      issue: (partner, scope) =>
        Effect.gen(function*() {
          const iat = yield* nowSeconds
          const expiresIn = yield* Ref.get(lifetime)
          const accessToken = Jwt.sign({
            iss: issuer,
            sub: partner.clientId,
            client_id: partner.clientId,
            scope,
            token_use: "access",
            iat,
            exp: iat + expiresIn,
            jti: Ids.makeRequestId()
          }, key)
          return { accessToken, expiresIn }
        }),
      verify: (token) => Effect.flatMap(nowSeconds, (now) => Jwt.verify(token, key, now)),
      lifetimeSeconds: Ref.get(lifetime),
      setLifetimeSeconds: (seconds) => Ref.set(lifetime, seconds),
      reset: Ref.set(lifetime, options.lifetimeSeconds)
    })
  })
