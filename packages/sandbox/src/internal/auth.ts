import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"
import { OAuthBadRequest, OAuthUnauthorized, SandboxApi } from "../Api.js"
import { defaultScope, Tokens } from "../Tokens.js"
import { readText } from "./body.js"
import { SandboxConfig } from "./config.js"
import { safeEqual } from "./credentials.js"

const invalidRequest = (description: string) =>
  new OAuthBadRequest({ error: "invalid_request", error_description: description })

const invalidClient = new OAuthUnauthorized({
  error: "invalid_client",
  error_description: "Client authentication failed"
})

/** RFC 6749 3.3: space-separated scope tokens of visible ASCII other than `"` and `\`. */
const scopeSyntax = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/

interface BasicCredentials {
  readonly clientId: string
  readonly clientSecret: string
}

const decodeComponent = (text: string): string => {
  try {
    return decodeURIComponent(text.replaceAll("+", " "))
  } catch {
    return text
  }
}

/**
 * The credentials of an `Authorization: Basic` header (RFC 6749 2.3.1), or
 * `undefined` when the header is not Basic; a malformed Basic header fails.
 */
const basicCredentials = (
  authorization: string | undefined
): Effect.Effect<BasicCredentials | undefined, OAuthUnauthorized> => {
  if (authorization === undefined || !/^basic\b/i.test(authorization)) return Effect.succeed(undefined)
  const match = /^basic\s+(\S+)\s*$/i.exec(authorization)
  if (match === null) return Effect.fail(invalidClient)
  return Result.match(Base64.decodeString(match[1]!), {
    onFailure: () => Effect.fail(invalidClient),
    onSuccess: (decoded) => {
      const colon = decoded.indexOf(":")
      return colon < 0 ? Effect.fail(invalidClient) : Effect.succeed({
        clientId: decodeComponent(decoded.slice(0, colon)),
        clientSecret: decodeComponent(decoded.slice(colon + 1))
      })
    }
  })
}

/** The token endpoint (spec 4.1): the client credentials grant, secret in the form or in a Basic header. */
export const AuthLive = HttpApiBuilder.group(SandboxApi, "auth", (handlers) =>
  Effect.gen(function*() {
    const config = yield* SandboxConfig
    const tokens = yield* Tokens
    return handlers.handleRaw("token", ({ request }) =>
      Effect.gen(function*() {
        const contentType = request.headers["content-type"]
        if (contentType !== undefined && !contentType.toLowerCase().includes("application/x-www-form-urlencoded")) {
          return yield* Effect.fail(invalidRequest("The body must be application/x-www-form-urlencoded"))
        }
        const body = yield* readText(request).pipe(
          Effect.catchTag("BadRequest", () => Effect.fail(invalidRequest("The body must be UTF-8")))
        )
        const form = new URLSearchParams(body)
        const grantType = form.get("grant_type")
        if (grantType === null) return yield* Effect.fail(invalidRequest("grant_type is required"))
        if (grantType !== "client_credentials") {
          return yield* Effect.fail(
            new OAuthBadRequest({
              error: "unsupported_grant_type",
              error_description: "Only client_credentials is supported"
            })
          )
        }
        const basic = yield* basicCredentials(request.headers.authorization)
        const formClientId = form.get("client_id")
        const formSecret = form.get("client_secret")
        if (basic !== undefined && formSecret !== null) {
          return yield* Effect.fail(
            invalidRequest("Send the client secret either in the form or in the Authorization header")
          )
        }
        if (basic !== undefined && formClientId !== null && formClientId !== basic.clientId) {
          return yield* Effect.fail(invalidRequest("client_id does not match the Authorization header"))
        }
        const clientId = basic?.clientId ?? formClientId
        if (clientId === null || clientId === "") return yield* Effect.fail(invalidRequest("client_id is required"))
        const secret = basic?.clientSecret ?? formSecret
        const partner = config.partners.find((candidate) => candidate.clientId === clientId)
        const authenticated = secret !== null && safeEqual(secret, partner?.clientSecret ?? "")
        if (partner === undefined || !authenticated) return yield* Effect.fail(invalidClient)
        const scope = form.get("scope") ?? defaultScope(config.stage)
        if (!scopeSyntax.test(scope)) {
          return yield* Effect.fail(
            new OAuthBadRequest({ error: "invalid_scope", error_description: "The scope is malformed" })
          )
        }
        const issued = yield* tokens.issue(partner, scope)
        return HttpServerResponse.jsonUnsafe(
          { access_token: issued.accessToken, expires_in: issued.expiresIn, token_type: "Bearer" },
          { headers: { "cache-control": "no-store", pragma: "no-cache" } }
        )
      }))
  }))
