/**
 * The sandbox's token issuer: signs access tokens under a random per-server
 * key and verifies them against `Clock`, to the millisecond. A token lives at
 * least the `expires_in` it is issued with (`claimTimes`). The lifetime can be
 * shortened while the server runs, to test expiry.
 */
import { Ids } from "@gcx/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Result from "effect/Result"
import { randomBytes } from "node:crypto"
import * as Jwt from "./Jwt.js"
import type { Partner } from "./TestData.js"

/** An issued access token and its lifetime in seconds. */
export interface Issued {
  readonly accessToken: string
  readonly expiresIn: number
}

/** The token issuer of one sandbox. */
export class Tokens extends Context.Service<Tokens, {
  readonly issue: (partner: Partner, scope: string) => Effect.Effect<Issued>
  readonly verify: (token: string) => Effect.Effect<Jwt.Claims, Jwt.JwtError>
  readonly lifetimeSeconds: Effect.Effect<number>
  readonly setLifetimeSeconds: (seconds: number) => Effect.Effect<void>
  /** Restores the configured lifetime. */
  readonly reset: Effect.Effect<void>
}>()("@gcx/sandbox/Tokens") {}

/** The scope a token carries when the request names none (Cognito style). */
export const defaultScope = (stage: string): string => `gcx-sandbox/exchange/${stage}/full-access`

/** The issuer (`iss`) of every sandbox token. */
export const issuer = "gcx-sandbox"

/**
 * The `iat` and `exp` claims of a token issued at `nowMillis` for
 * `lifetimeSeconds`: `iat` is the second of issue (rounded down), `exp` the
 * end of the lifetime rounded up, so that a token never dies before the
 * `expires_in` it was issued with. A lifetime of 0 (or less) gives a token
 * that has already expired.
 */
export const claimTimes = (
  nowMillis: number,
  lifetimeSeconds: number
): { readonly iat: number; readonly exp: number } => ({
  iat: Math.floor(nowMillis / 1000),
  exp: lifetimeSeconds > 0 ? Math.ceil((nowMillis + lifetimeSeconds * 1000) / 1000) : Math.floor(nowMillis / 1000)
})

/** How many verified tokens are remembered (then forgotten all at once). */
const maxVerified = 10_000

/** Builds a token issuer with a fresh random signing key. */
export const make = (options: { readonly lifetimeSeconds: number }): Effect.Effect<Tokens["Service"]> =>
  Effect.gen(function*() {
    const key = randomBytes(32)
    const lifetime = yield* Ref.make(options.lifetimeSeconds)
    // Tokens whose signature checked out, so that each is verified once; their expiry is checked on every use.
    const verified = new Map<string, Jwt.Claims>()
    return Tokens.of({
      issue: (partner, scope) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const expiresIn = yield* Ref.get(lifetime)
          const { exp, iat } = claimTimes(now, expiresIn)
          const accessToken = Jwt.sign({
            iss: issuer,
            sub: partner.clientId,
            client_id: partner.clientId,
            scope,
            token_use: "access",
            iat,
            exp,
            jti: Ids.makeRequestId()
          }, key)
          return { accessToken, expiresIn }
        }),
      // The current time to the millisecond: a token is valid while now < exp.
      verify: (token) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const known = verified.get(token)
          if (known !== undefined) {
            return known.exp > now / 1000
              ? Effect.succeed(known)
              : Effect.fail(new Jwt.JwtError({ reason: "Expired" }))
          }
          return Effect.fromResult(Result.map(Jwt.verify(token, key, now / 1000), (claims) => {
            if (verified.size >= maxVerified) verified.clear()
            verified.set(token, claims)
            return claims
          }))
        }),
      lifetimeSeconds: Ref.get(lifetime),
      setLifetimeSeconds: (seconds) => Ref.set(lifetime, seconds),
      reset: Ref.set(lifetime, options.lifetimeSeconds)
    })
  })
