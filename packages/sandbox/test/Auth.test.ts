import { describe, expect, it, layer } from "@effect/vitest"
import { Routes } from "@gcx/core"
import { Sandbox, TestData, Tokens } from "@gcx/sandbox"
import { Effect } from "effect"
import { basic, call, credentialsForm, exchangeHeaders, tokenFor, tokenRequest } from "./helpers.js"

const decodeSegment = (segment: string): any => JSON.parse(Buffer.from(segment, "base64url").toString("utf8"))

const { clientId, clientSecret } = TestData.partner

layer(Sandbox.layer({ timeScale: 0.01 }), { excludeTestServices: true })("token endpoint", (it) => {
  it.effect("client_credentials with the secret in the form: 200 with a signed HS256 JWT", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const reply = yield* tokenRequest(server, credentialsForm())
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toContain("application/json")
      expect(reply.headers.get("cache-control")).toBe("no-store")
      expect(reply.headers.get(Routes.Headers.traceId)).not.toBeNull()
      expect(Object.keys(reply.body).sort()).toEqual(["access_token", "expires_in", "token_type"])
      expect(reply.body).toMatchObject({ expires_in: 3600, token_type: "Bearer" })
      const [header, claims, signature] = reply.body.access_token.split(".")
      expect(decodeSegment(header)).toEqual({ alg: "HS256", typ: "JWT" })
      const decoded = decodeSegment(claims)
      expect(decoded).toMatchObject({
        iss: Tokens.issuer,
        sub: clientId,
        client_id: clientId,
        scope: Tokens.defaultScope(server.stage),
        token_use: "access"
      })
      // iat is the second of issue rounded down, exp the promised end rounded up
      expect(decoded.exp - decoded.iat).toBeGreaterThanOrEqual(3600)
      expect(decoded.exp - decoded.iat).toBeLessThanOrEqual(3601)
      expect(Math.abs(decoded.iat - Date.now() / 1000)).toBeLessThan(5)
      expect(decoded.jti).toMatch(/^[0-9a-f]{32}$/)
      expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/)
    }))

  it.effect("client_credentials with a Basic header and grant_type, scope and client_id in the form", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const scope = "partner-api/exchange/sandbox/full-access"
      const reply = yield* tokenRequest(
        server,
        { grant_type: "client_credentials", scope, client_id: TestData.agentPartner.clientId },
        { authorization: basic(TestData.agentPartner.clientId, TestData.agentPartner.clientSecret) }
      )
      expect(reply.status).toBe(200)
      expect(decodeSegment(reply.body.access_token.split(".")[1])).toMatchObject({
        sub: TestData.agentPartner.clientId,
        scope
      })
      const withoutClientId = yield* tokenRequest(
        server,
        { grant_type: "client_credentials" },
        { authorization: basic(clientId, clientSecret) }
      )
      expect(withoutClientId.status).toBe(200)
      const heartbeat = yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, {
        headers: exchangeHeaders(reply.body.access_token, { partner: TestData.agentPartner })
      })
      expect(heartbeat.status).toBe(200)
    }))

  const refusals: ReadonlyArray<
    readonly [string, Record<string, string>, Record<string, string>, number, string]
  > = [
    [
      "a wrong secret in the form",
      {
        grant_type: "client_credentials",
        client_id: clientId,
        client_secret: "wrong"
      },
      {},
      401,
      "invalid_client"
    ],
    [
      "a wrong secret in the Basic header",
      { grant_type: "client_credentials" },
      {
        authorization: basic(clientId, "wrong")
      },
      401,
      "invalid_client"
    ],
    [
      "an unknown client",
      {
        grant_type: "client_credentials",
        client_id: "nobody",
        client_secret: clientSecret
      },
      {},
      401,
      "invalid_client"
    ],
    ["no secret at all", { grant_type: "client_credentials", client_id: clientId }, {}, 401, "invalid_client"],
    [
      "a malformed Basic header",
      { grant_type: "client_credentials" },
      {
        authorization: "Basic not base64 at all"
      },
      401,
      "invalid_client"
    ],
    [
      "a Basic header without a colon",
      { grant_type: "client_credentials" },
      {
        authorization: `Basic ${Buffer.from(clientId).toString("base64")}`
      },
      401,
      "invalid_client"
    ],
    ["no grant_type", { client_id: clientId, client_secret: clientSecret }, {}, 400, "invalid_request"],
    [
      "another grant_type",
      {
        grant_type: "password",
        client_id: clientId,
        client_secret: clientSecret
      },
      {},
      400,
      "unsupported_grant_type"
    ],
    ["no client_id", { grant_type: "client_credentials", client_secret: clientSecret }, {}, 400, "invalid_request"],
    [
      "both a Basic header and a form secret",
      {
        grant_type: "client_credentials",
        client_secret: clientSecret
      },
      { authorization: basic(clientId, clientSecret) },
      400,
      "invalid_request"
    ],
    [
      "a form client_id that differs from the Basic header",
      {
        grant_type: "client_credentials",
        client_id: TestData.agentPartner.clientId
      },
      { authorization: basic(clientId, clientSecret) },
      400,
      "invalid_request"
    ],
    [
      "a malformed scope",
      {
        grant_type: "client_credentials",
        client_id: clientId,
        client_secret: clientSecret,
        scope: "a\\b"
      },
      {},
      400,
      "invalid_scope"
    ],
    [
      "a JSON body",
      credentialsForm(),
      { "content-type": "application/json" },
      400,
      "invalid_request"
    ]
  ]

  describe("RFC 6749 errors", () => {
    for (const [name, form, headers, status, error] of refusals) {
      it.effect(`${name}: ${status} ${error}`, () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const reply = yield* tokenRequest(server, form, headers)
          expect(reply.status).toBe(status)
          expect(reply.body).toEqual({ error, error_description: expect.any(String) })
          expect(reply.text).not.toContain(clientSecret)
        }))
    }
  })

  it.effect("a token from another sandbox (another signing key) is refused", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const foreign = yield* Effect.scoped(
        Effect.flatMap(Sandbox.make(), (other) => tokenFor(other))
      )
      const reply = yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(foreign) })
      expect(reply.status).toBe(401)
      expect(reply.body.Message).toContain("signature")
    }))
})

describe("token lifetime", () => {
  it.live("a token works until its lifetime ends, then answers 401", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const reply = yield* tokenRequest(server, credentialsForm())
      expect(reply.body.expires_in).toBe(1)
      const heartbeat = call(`${server.baseUrl}${Routes.heartbeatPath}`, {
        headers: exchangeHeaders(reply.body.access_token)
      })
      expect((yield* heartbeat).status).toBe(200)
      const exp = decodeSegment(reply.body.access_token.split(".")[1]).exp as number
      yield* Effect.sleep(Math.max(0, exp * 1000 - Date.now()) + 20)
      const expired = yield* heartbeat
      expect(expired.status).toBe(401)
      expect(expired.body.Message).toContain("expired")
    }).pipe(Effect.provide(Sandbox.layer({ tokenLifetimeSeconds: 1 }))))

  it.live("with authPort, the token endpoint is served on its own port, and only there", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      expect(server.authUrl).not.toBe(server.baseUrl)
      const form = credentialsForm()
      const onAuth = yield* tokenRequest(server, form)
      expect(onAuth.status).toBe(200)
      const onApi = yield* call(`${server.baseUrl}${Routes.tokenPath}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form).toString()
      })
      expect(onApi.status).toBe(404)
      const heartbeatOnAuth = yield* call(`${server.authUrl}${Routes.heartbeatPath}`, {
        headers: exchangeHeaders(onAuth.body.access_token)
      })
      expect(heartbeatOnAuth.status).toBe(404)
      const heartbeat = yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, {
        headers: exchangeHeaders(onAuth.body.access_token)
      })
      expect(heartbeat.status).toBe(200)
      const journal = yield* server.journal
      expect(journal.requests).toMatchObject({ token: 2, heartbeat: 2 })
    }).pipe(Effect.provide(Sandbox.layer({ authPort: 0 }))))
})
