/**
 * HS256 JSON Web Tokens, signed and verified with node:crypto. The signature
 * is compared in constant time; expiry is checked against a time the caller
 * reads from `Clock`.
 */
import * as Data from "effect/Data"
import * as Result from "effect/Result"
import { createHmac } from "node:crypto"
import { safeEqual } from "./internal/credentials.js"

/** The claims of a sandbox access token. Times are seconds since the epoch. */
export interface Claims {
  readonly iss: string
  /** The partner's client id. */
  readonly sub: string
  readonly client_id: string
  readonly scope: string
  readonly token_use: "access"
  readonly iat: number
  readonly exp: number
  readonly jti: string
}

/** Why a token was refused. The message never contains the token. */
export class JwtError extends Data.TaggedError("JwtError")<{
  readonly reason: "Malformed" | "Signature" | "Expired"
}> {
  override get message(): string {
    switch (this.reason) {
      case "Malformed":
        return "The access token is malformed"
      case "Signature":
        return "The access token signature is invalid"
      case "Expired":
        return "The access token has expired"
    }
  }
}

const header = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url")

const signature = (input: string, key: Uint8Array): string =>
  createHmac("sha256", key).update(input).digest("base64url")

/** Signs the claims with HS256 under the key. */
export const sign = (claims: Claims, key: Uint8Array): string => {
  const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`
  return `${input}.${signature(input, key)}`
}

const isClaims = (u: unknown): u is Claims => {
  if (typeof u !== "object" || u === null) return false
  const claims = u as Record<string, unknown>
  return typeof claims.sub === "string" && typeof claims.scope === "string" && typeof claims.exp === "number" &&
    typeof claims.iat === "number"
}

const decodeJson = (segment: string): unknown => {
  try {
    return JSON.parse(Buffer.from(segment, "base64url").toString("utf8"))
  } catch {
    return undefined
  }
}

/**
 * Verifies an HS256 token under the key: its shape, its header, its signature
 * (constant time) and that it has not expired at `nowSeconds`: it is valid
 * while `nowSeconds < exp`. `nowSeconds` may be fractional (the current time
 * in milliseconds / 1000); do not round it, or a token is judged up to a
 * second off.
 */
export const verify = (token: string, key: Uint8Array, nowSeconds: number): Result.Result<Claims, JwtError> => {
  const parts = token.split(".")
  if (parts.length !== 3) return Result.fail(new JwtError({ reason: "Malformed" }))
  const [encodedHeader, encodedClaims, givenSignature] = parts as [string, string, string]
  const decodedHeader = decodeJson(encodedHeader) as { alg?: unknown } | undefined
  const claims = decodeJson(encodedClaims)
  if (decodedHeader?.alg !== "HS256" || !isClaims(claims)) return Result.fail(new JwtError({ reason: "Malformed" }))
  if (!safeEqual(givenSignature, signature(`${encodedHeader}.${encodedClaims}`, key))) {
    return Result.fail(new JwtError({ reason: "Signature" }))
  }
  return claims.exp > nowSeconds ? Result.succeed(claims) : Result.fail(new JwtError({ reason: "Expired" }))
}
