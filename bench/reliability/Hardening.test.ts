/**
 * Sandbox hardening, over plain HTTP against a sandbox process: forged,
 * expired and missing tokens, a wrong API key, oversized and malformed
 * bodies, unknown paths, bad token requests, the admin API without its key
 * and bytes that are not HTTP at all. Each is refused with the documented
 * status and body (packages/sandbox/README.md), never with a stack trace, and
 * the server still serves a whole quote afterwards.
 */
import { describe, expect, it } from "@effect/vitest"
import { ErrorBody } from "@gcx/core"
import { Api, TestData } from "@gcx/sandbox"
import { createHmac, randomBytes } from "node:crypto"
import * as Net from "node:net"
import * as Admin from "../internal/Admin.js"
import type { Endpoint } from "../internal/SandboxProcess.js"
import { sandboxProcess } from "./sandbox.js"

const codes = ErrorBody.ErrorCodes

/** An answer, read whole. */
interface Reply {
  readonly status: number
  readonly text: string
  readonly json: Record<string, unknown> | undefined
  readonly traceId: string | null
}

const send = async (url: string, init: RequestInit = {}): Promise<Reply> => {
  const response = await fetch(url, init)
  const text = await response.text()
  let json: Record<string, unknown> | undefined
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = undefined
  }
  return { status: response.status, text, json, traceId: response.headers.get("svc-trace-id") }
}

/** No stack trace, no internal message, no source path. */
const expectClean = (reply: Reply) => {
  expect(reply.text).not.toMatch(
    /\bat .+:\d+:\d+|stack|node_modules|\.ts\b|TypeError|SyntaxError|RangeError|Unexpected token/
  )
}

/** A refusal with the documented status and Error body. */
const expectError = (reply: Reply, status: number, errorCode: string) => {
  expect(reply.status).toBe(status)
  expect(reply.json?.ErrorCode).toBe(errorCode)
  expect(typeof reply.json?.Message).toBe("string")
  expectClean(reply)
}

const quoteUrl = (endpoint: Endpoint) => `${endpoint.baseUrl}/${endpoint.stage}/v3/exchange/quote`

const tokenFor = async (endpoint: Endpoint): Promise<string> => {
  const reply = await send(`${endpoint.authUrl}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: TestData.partner.clientId,
      client_secret: TestData.partner.clientSecret
    })
  })
  expect(reply.status).toBe(200)
  return reply.json!.access_token as string
}

const headers = (token: string | undefined, overrides: Record<string, string> = {}): Record<string, string> => ({
  ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
  "x-api-key": TestData.partner.apiKey,
  requestId: randomBytes(16).toString("hex"),
  "content-type": "application/json",
  ...overrides
})

const card = { cardNumber: "6006000000000019", pinNumber: "1234", productLineId: "1000" }

const postQuote = (endpoint: Endpoint, requestHeaders: Record<string, string>, body: BodyInit) =>
  send(quoteUrl(endpoint), { method: "POST", headers: requestHeaders, body })

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

/** An HS256 token with the sandbox's claims, signed with a key of our own. */
const forged = (claims: Record<string, unknown>, key: Uint8Array = randomBytes(32)): string => {
  const input = `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url(claims)}`
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`
}

/** Sends raw bytes over TCP and returns what comes back before the server closes. */
const raw = (endpoint: Endpoint, bytes: string): Promise<string> =>
  new Promise((resolve) => {
    const url = new URL(endpoint.baseUrl)
    const socket = Net.connect(Number(url.port), url.hostname)
    let received = ""
    socket.on("data", (chunk) => (received += chunk.toString()))
    socket.on("close", () => resolve(received))
    socket.on("error", () => resolve(received))
    socket.setTimeout(3_000, () => socket.destroy())
    socket.write(bytes)
  })

/** A whole quote: token, POST, GET. */
const stillServing = async (endpoint: Endpoint) => {
  const token = await tokenFor(endpoint)
  const created = await postQuote(endpoint, headers(token), JSON.stringify({ card }))
  expect(created.status).toBe(201)
  const status = await send(`${quoteUrl(endpoint)}/${created.json!.transactionId as string}`, {
    headers: headers(token)
  })
  expect(status.status).toBe(200)
  expect((status.json!.response as Record<string, unknown>).isCompleted).toBe(true)
  const heartbeat = await send(`${endpoint.baseUrl}/exchange/v3/heartbeat`, { headers: headers(token) })
  expect(heartbeat.status).toBe(200)
}

describe("sandbox hardening", () => {
  const sandbox = sandboxProcess()
  const endpoint = () => sandbox.get().endpoint

  it("missing, malformed, forged and tampered tokens: 401 exchange.unauthorized on every exchange route", async () => {
    const real = await tokenFor(endpoint())
    const [encodedHeader, encodedClaims] = real.split(".") as [string, string, string]
    const claims = JSON.parse(Buffer.from(encodedClaims, "base64url").toString()) as Record<string, unknown>
    const bad: ReadonlyArray<string | undefined> = [
      undefined,
      "",
      "not-a-token",
      "a.b.c",
      forged(claims),
      `${encodedHeader}.${base64url({ ...claims, exp: (claims.exp as number) + 3_600 })}.${real.split(".")[2]}`,
      `${base64url({ alg: "none", typ: "JWT" })}.${encodedClaims}.`,
      forged({ ...claims, sub: "someone-else" }),
      `${real}x`
    ]
    for (const token of bad) {
      expectError(await postQuote(endpoint(), headers(token), JSON.stringify({ card })), 401, codes.unauthorized)
      expectError(await send(`${quoteUrl(endpoint())}/X`, { headers: headers(token) }), 401, codes.unauthorized)
      expectError(
        await send(`${endpoint().baseUrl}/exchange/v3/heartbeat`, { headers: headers(token) }),
        401,
        codes.unauthorized
      )
    }
  })

  it("an expired token: 401 exchange.unauthorized", async () => {
    await Admin.setTokenLifetime(endpoint(), 0)
    const expired = await tokenFor(endpoint())
    await Admin.setTokenLifetime(endpoint(), 3_600)
    expectError(await postQuote(endpoint(), headers(expired), JSON.stringify({ card })), 401, codes.unauthorized)
  })

  it("a wrong or missing API key: 400 exchange.invalid.x-api-key; no requestId: 400", async () => {
    const token = await tokenFor(endpoint())
    for (const apiKey of ["wrong-key", "", TestData.agentPartner.apiKey, TestData.partner.apiKey.toUpperCase()]) {
      expectError(
        await postQuote(endpoint(), headers(token, { "x-api-key": apiKey }), JSON.stringify({ card })),
        400,
        codes.invalidApiKey
      )
    }
    const { requestId: _, ...withoutRequestId } = headers(token)
    expectError(await postQuote(endpoint(), withoutRequestId, JSON.stringify({ card })), 400, codes.missingRequestId)
  })

  it("oversized bodies: 413 request.body.too.large, declared or chunked", async () => {
    const token = await tokenFor(endpoint())
    const big = JSON.stringify({ card, padding: "x".repeat(Api.maxBodyBytes) })
    expectError(await postQuote(endpoint(), headers(token), big), 413, codes.bodyTooLarge)
    const chunk = new TextEncoder().encode(" ".repeat(8_192))
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(chunk)
        controller.close()
      }
    })
    const chunked = await send(quoteUrl(endpoint()), {
      method: "POST",
      headers: headers(token),
      body: stream,
      duplex: "half"
    } as RequestInit)
    expectError(chunked, 413, codes.bodyTooLarge)
  })

  it("malformed bodies: 400 with an Error body that never echoes the body", async () => {
    const token = await tokenFor(endpoint())
    const bodies: ReadonlyArray<readonly [string, string]> = [
      ["not json", codes.invalidBody],
      ["{\"card\":", codes.invalidBody],
      ["", codes.invalidBody],
      ["[]", codes.invalidBody],
      ["null", codes.invalidBody],
      ["\"6006000000000001\"", codes.invalidBody],
      ["{\"card\":\"6006000000000001\"}", codes.invalidParameter],
      ["{\"card\":{\"cardNumber\":\"6006000000000001\"}}", codes.invalidParameter],
      [
        "{\"card\":{\"cardNumber\":6006000000000001,\"pinNumber\":1234,\"productLineId\":1000}}",
        codes.invalidParameter
      ],
      [JSON.stringify({ card: { ...card, pinNumber: "12\u000034" } }), codes.invalidParameter],
      [JSON.stringify({ card: { ...card, productLineId: "9999" } }), codes.invalidProductLine]
    ]
    for (const [body, code] of bodies) {
      const reply = await postQuote(endpoint(), headers(token), body)
      expectError(reply, 400, code)
      expect(reply.text).not.toContain("6006000000000001")
      expect(reply.text).not.toContain("1234")
    }
  })

  it("unknown paths and methods: 404 request.route.not.found", async () => {
    const token = await tokenFor(endpoint())
    const requests: ReadonlyArray<readonly [string, string]> = [
      ["GET", "/"],
      ["GET", "/nope"],
      ["GET", "/../../etc/passwd"],
      ["GET", `/${endpoint().stage}/v3/exchange/quote/a/b`],
      ["DELETE", `/${endpoint().stage}/v3/exchange/quote`],
      ["PUT", "/exchange/v3/heartbeat"],
      ["GET", "/v4/exchange/quote"],
      ["GET", `/%00/${"x".repeat(2_000)}`]
    ]
    for (const [method, path] of requests) {
      expectError(
        await send(`${endpoint().baseUrl}${path}`, { method, headers: headers(token) }),
        404,
        codes.routeNotFound
      )
    }
  })

  it("bad token requests: 401 invalid_client, 400 unsupported_grant_type or invalid_request", async () => {
    const form = (fields: Record<string, string>, contentType = "application/x-www-form-urlencoded") =>
      send(`${endpoint().authUrl}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": contentType },
        body: new URLSearchParams(fields).toString()
      })
    const cases: ReadonlyArray<readonly [Promise<Reply>, number, string]> = [
      [
        form({ grant_type: "client_credentials", client_id: TestData.partner.clientId, client_secret: "wrong" }),
        401,
        "invalid_client"
      ],
      [form({ grant_type: "client_credentials", client_id: "nobody", client_secret: "x" }), 401, "invalid_client"],
      [form({ grant_type: "password", client_id: TestData.partner.clientId }), 400, "unsupported_grant_type"],
      [form({ client_id: TestData.partner.clientId }), 400, "invalid_request"],
      [form({ grant_type: "client_credentials" }, "application/json"), 400, "invalid_request"]
    ]
    for (const [pending, status, error] of cases) {
      const reply = await pending
      expect(reply.status).toBe(status)
      expect(reply.json?.error).toBe(error)
      expectClean(reply)
      expect(reply.text).not.toContain("wrong")
    }
  })

  it("the admin API: 401 without its key, 403 with a wrong one", async () => {
    const missing = await send(`${endpoint().baseUrl}${Api.adminPrefix}/journal`)
    expectError(missing, 401, codes.unauthorized)
    const wrong = await send(`${endpoint().baseUrl}${Api.adminPrefix}/journal`, {
      headers: { [Api.adminKeyHeader]: "wrong" }
    })
    expectError(wrong, 403, codes.unauthorized)
  })

  it("bytes that are not HTTP: the connection is answered or closed, never a stack trace", async () => {
    for (
      const bytes of [
        "hello\r\n\r\n",
        "GET / HTTP/9.9\r\n\r\n",
        "\u0000\u0001\u0002\r\n\r\n",
        "POST /oauth2/token HTTP/1.1\r\nContent-Length: -1\r\n\r\n"
      ]
    ) {
      const answer = await raw(endpoint(), bytes)
      expect(answer).not.toMatch(/\bat .+:\d+:\d+|node_modules|Error:/)
    }
  })

  it("after all of it, and a burst of 500 bad requests, the server still serves a whole quote", async () => {
    const token = await tokenFor(endpoint())
    const replies = await Promise.all(Array.from({ length: 500 }, (_, index) =>
      index % 2 === 0
        ? postQuote(endpoint(), headers(forged({ sub: TestData.partner.clientId, exp: 9_999_999_999 })), "{}")
        : postQuote(endpoint(), headers(token), "{\"card\":")))
    expect(replies.every((reply) => reply.status === 401 || reply.status === 400)).toBe(true)
    await stillServing(endpoint())
  })
})
