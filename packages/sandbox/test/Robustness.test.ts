import { describe, expect, it, layer } from "@effect/vitest"
import { ErrorBody, Routes } from "@gcx/core"
import { Api, Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Logger, References, Tracer } from "effect"
import {
  admin,
  basic,
  call,
  credentialsForm,
  exchangeHeaders,
  getTransaction,
  pollUntil,
  postQuote,
  quoteBody,
  tokenFor,
  tokenRequest
} from "./helpers.js"

/** No stack trace, no internal message: only the Error body's fields. */
const expectCleanError = (text: string) => {
  expect(text).not.toMatch(/\bat .+:\d+:\d+|stack|node_modules|TypeError|SyntaxError|Unexpected token/)
}

layer(Sandbox.layer({ timeScale: 0.01 }), { excludeTestServices: true })("robustness", (it) => {
  describe("body limit", () => {
    it.effect("a body over 16 KiB answers 413 with an Error body; exactly 16 KiB is accepted", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const body = quoteBody(TestData.Cards.instant)
        const padded = body + " ".repeat(Api.maxBodyBytes - Buffer.byteLength(body))
        const atLimit = yield* postQuote(server, exchangeHeaders(token), padded)
        expect(atLimit.status).toBe(201)
        const over = yield* postQuote(server, exchangeHeaders(token), `${padded} `)
        expect(over.status).toBe(413)
        expect(over.body).toEqual({ ErrorCode: ErrorBody.ErrorCodes.bodyTooLarge, Message: expect.any(String) })
        expect(over.headers.get(Routes.Headers.traceId)).not.toBeNull()
        const token413 = yield* tokenRequest(server, { grant_type: "client_credentials", pad: "x".repeat(20_000) })
        expect(token413.status).toBe(413)
      }))

    it.effect("a chunked body over 16 KiB (no Content-Length) also answers 413, not a reset", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const chunk = new TextEncoder().encode(" ".repeat(4096))
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 8; i++) controller.enqueue(chunk)
            controller.close()
          }
        })
        const reply = yield* call(`${server.baseUrl}${Routes.quotePath()}`, {
          method: "POST",
          headers: exchangeHeaders(token),
          body: stream,
          duplex: "half"
        } as RequestInit)
        expect(reply.status).toBe(413)
        expect(reply.body.ErrorCode).toBe(ErrorBody.ErrorCodes.bodyTooLarge)
      }))
  })

  it.effect("malformed JSON answers 400 request.invalid.body, without a stack trace or internal message", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const token = yield* tokenFor(server)
      for (const body of ["{\"card\": {", "not json", "", "{\"card\":{\"cardNumber\":\"6006000000000001\""]) {
        const reply = yield* postQuote(server, exchangeHeaders(token), body)
        expect(reply.status).toBe(400)
        expect(reply.body).toEqual({ ErrorCode: ErrorBody.ErrorCodes.invalidBody, Message: expect.any(String) })
        expectCleanError(reply.text)
        expect(reply.text).not.toContain(TestData.Cards.success)
      }
    }))

  it.effect("unknown routes and wrong methods answer 404 with an Error body", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const token = yield* tokenFor(server)
      for (
        const [method, path] of [
          ["GET", "/nowhere"],
          ["GET", Routes.quotePath()],
          ["DELETE", Routes.transactionPath("X")],
          ["POST", Routes.heartbeatPath],
          ["GET", "/v2/exchange/quote/X"]
        ]
      ) {
        const reply = yield* call(`${server.baseUrl}${path}`, { method, headers: exchangeHeaders(token) })
        expect(reply.status).toBe(404)
        expect(reply.body.ErrorCode).toBe(ErrorBody.ErrorCodes.routeNotFound)
        expectCleanError(reply.text)
      }
    }))

  it.effect("every answer carries SVC-TRACE-ID, each its own", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const token = yield* tokenFor(server)
      const replies = [
        yield* tokenRequest(server, { grant_type: "client_credentials" }, {
          authorization: basic(TestData.partner.clientId, TestData.partner.clientSecret)
        }),
        yield* tokenRequest(server, { grant_type: "nope" }),
        yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) }),
        yield* call(`${server.baseUrl}${Routes.heartbeatPath}`),
        yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.success)),
        yield* postQuote(server, exchangeHeaders(token), "{"),
        yield* getTransaction(server, exchangeHeaders(token), "UNKNOWN"),
        yield* call(`${server.baseUrl}/nowhere`),
        yield* call(`${server.baseUrl}/openapi.json`),
        yield* admin(server, "GET", "/journal")
      ]
      const traceIds = replies.map((reply) => reply.headers.get("svc-trace-id"))
      expect(traceIds.every((id) => id !== null && /^[0-9a-f]{32}$/.test(id))).toBe(true)
      expect(new Set(traceIds).size).toBe(replies.length)
    }))

  it.effect("/openapi.json is generated from the HttpApi definition", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const reply = yield* call(`${server.baseUrl}/openapi.json`)
      expect(reply.status).toBe(200)
      const spec = reply.body
      expect(spec.openapi).toMatch(/^3\./)
      expect(spec.info.title).toBe("gcx sandbox")
      expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining([
        Routes.tokenPath,
        Routes.heartbeatPath,
        Routes.quotePath(),
        `${Routes.quotePath()}/{transactionId}`,
        "/__sandbox/journal",
        "/__sandbox/faults",
        "/__sandbox/reset"
      ]))
      const post = spec.paths[Routes.quotePath()].post
      expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(["201", "400", "401", "413"]))
      expect(post.parameters.map((parameter: any) => parameter.name)).toEqual(
        expect.arrayContaining(["x-api-key", "requestid", "previousattempts"])
      )
      expect(Object.keys(spec.components.securitySchemes)).toEqual(expect.arrayContaining(["bearer", "adminKey"]))
    }))

  it.effect("/docs serves a self-contained interactive page over the OpenAPI document", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const reply = yield* call(`${server.baseUrl}/docs`)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toContain("text/html")
      expect(reply.text).toContain("SwaggerUIBundle")
      expect(reply.text).toContain(Routes.heartbeatPath)
      expect(reply.text).not.toMatch(/<script[^>]+src=["']https?:/)
    }))

  it.effect("holds 64 concurrent connections without errors", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      const token = yield* tokenFor(server)
      // Each POST is held 200 ms, so the 64 are in flight together, each on its own connection.
      const heldMillis = 200
      yield* server.setFaults([{ route: "createQuote", kind: "latency", latencyMillis: heldMillis }])
      const start = Date.now()
      const created = yield* Effect.forEach(
        Array.from({ length: 64 }, (_, i) => i),
        (i) =>
          Effect.gen(function*() {
            const headers = exchangeHeaders(token)
            const reply = yield* postQuote(server, headers, quoteBody(`9000${String(i).padStart(12, "0")}`))
            return { headers, reply }
          }),
        { concurrency: 64 }
      )
      const postMillis = Date.now() - start
      yield* server.setFaults([])
      expect(created.map(({ reply }) => reply.status)).toEqual(Array.from({ length: 64 }, () => 201))
      // Every POST waited out its latency. Served one at a time they would take 64 x 200 ms = 12.8 s
      // whatever the machine's load; served together they take a little over 200 ms (about 0.3 to 1 s
      // here), so half the serial time leaves a margin of 5x or more for a loaded machine.
      expect(postMillis).toBeGreaterThanOrEqual(heldMillis - 5)
      expect(postMillis).toBeLessThan(64 * heldMillis / 2)
      const done = yield* Effect.forEach(
        created,
        ({ headers, reply }) =>
          pollUntil(
            getTransaction(server, headers, reply.body.transactionId),
            (poll) => poll.status !== 200 || poll.body.response.isCompleted
          ),
        { concurrency: 64 }
      )
      expect(done.map((reply) => reply.status)).toEqual(Array.from({ length: 64 }, () => 200))
      const journal = yield* server.journal
      expect(journal.requests.createQuote).toBe(64)
      expect(journal.entries.filter((entry) => entry.status !== undefined && entry.status >= 400)).toEqual([])
    }))
})

describe("embedding", () => {
  it.live("two sandboxes run side by side in one process, each on its own port with its own state", () =>
    Effect.gen(function*() {
      const one = yield* Sandbox.make({ timeScale: 0.01 })
      const two = yield* Sandbox.make({ timeScale: 0.01, stage: "uat" })
      expect(one.baseUrl).not.toBe(two.baseUrl)
      expect(two.stage).toBe("uat")
      const token = yield* tokenFor(one)
      const created = yield* postQuote(one, exchangeHeaders(token), quoteBody(TestData.Cards.instant))
      expect(created.status).toBe(201)
      expect(yield* one.transactions).toHaveLength(1)
      expect(yield* two.transactions).toHaveLength(0)
      const otherToken = yield* tokenFor(two)
      const staged = yield* call(`${two.baseUrl}${Routes.quotePath("uat")}`, {
        method: "POST",
        headers: exchangeHeaders(otherToken),
        body: quoteBody(TestData.Cards.instant)
      })
      expect(staged.status).toBe(201)
      expect(staged.headers.get("location")).toContain(`/uat${Routes.quotePath()}/`)
      const sandboxStage = yield* postQuote(two, exchangeHeaders(otherToken), quoteBody(TestData.Cards.instant), {
        staged: false
      })
      expect(sandboxStage.status).toBe(201)
    }).pipe(Effect.scoped))

  it.live("the server stops when its scope closes", () =>
    Effect.gen(function*() {
      const baseUrl = yield* Effect.scoped(Effect.map(Sandbox.make(), (server) => server.baseUrl))
      const error = yield* Effect.flip(call(`${baseUrl}${Routes.heartbeatPath}`))
      expect(String((error as Error).cause)).toContain("ECONNREFUSED")
    }))

  it.live("logs carry method, route and status, and nothing secret or card-related", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ cause, fiber, message }) => {
        lines.push(JSON.stringify({
          message,
          annotations: fiber.getRef(References.CurrentLogAnnotations),
          cause: String(cause)
        }))
      })
      const secretPin = "73519"
      const secretCard = "4111222233334444"
      yield* Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const form = credentialsForm()
        yield* tokenRequest(server, form)
        yield* tokenRequest(server, { ...form, client_secret: "wrong-secret-value" })
        yield* tokenRequest(server, { grant_type: "client_credentials" }, {
          authorization: basic(TestData.agentPartner.clientId, TestData.agentPartner.clientSecret)
        })
        const token = yield* tokenFor(server)
        const headers = exchangeHeaders(token)
        const created = yield* postQuote(server, headers, quoteBody(secretCard, { pin: secretPin }))
        yield* postQuote(server, headers, quoteBody(TestData.Cards.invalid, { pin: secretPin }))
        yield* postQuote(server, exchangeHeaders(token), `{"card":{"cardNumber":"${secretCard}"`)
        yield* getTransaction(server, headers, created.body.transactionId)
        yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer", times: 1 }])
        yield* Effect.result(postQuote(server, exchangeHeaders(token), quoteBody(secretCard, { pin: secretPin })))
        yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, {
          headers: { ...headers, authorization: `Bearer ${token}x` }
        })
        const text = lines.join("\n")
        for (
          const secret of [
            TestData.partner.clientSecret,
            TestData.agentPartner.clientSecret,
            "wrong-secret-value",
            TestData.partner.apiKey,
            token,
            token.split(".")[2]!,
            secretCard,
            secretCard.slice(-8),
            secretPin,
            TestData.Cards.invalid
          ]
        ) {
          expect(text).not.toContain(secret)
        }
        expect(lines.length).toBeGreaterThanOrEqual(9)
        expect(text).toContain("\"route\":\"createQuote\"")
        expect(text).toContain("\"status\":201")
        expect(text).toContain("\"status\":\"dropped\"")
        expect(text).toContain("\"method\":\"POST\"")
      }).pipe(
        Effect.provide(Sandbox.layer({ timeScale: 0.01, logLevel: "Info" })),
        Effect.provide(Logger.layer([capture])),
        Effect.provideService(References.MinimumLogLevel, "All")
      )
    }))
})

describe("tracing", () => {
  it.live("server spans never show the admin key, a bearer token, an API key or a Basic secret", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const native = yield* Effect.tracer
      const capturing = Tracer.make({
        ...native,
        span(options) {
          const span = native.span(options)
          spans.push(span)
          return span
        }
      })
      const adminKey = "sentinel-admin-key-7f3a9c"
      const secrets = yield* Effect.gen(function*() {
        const server = yield* Sandbox.make({ timeScale: 0.01, adminKey, logLevel: "None" })
        const basicHeader = basic(TestData.agentPartner.clientId, TestData.agentPartner.clientSecret)
        // the admin API: a right key, a wrong one, and a PUT with a body
        expect((yield* admin(server, "GET", "/journal")).status).toBe(200)
        expect((yield* admin(server, "PUT", "/faults", [])).status).toBe(200)
        const wrong = yield* call(`${server.baseUrl}/__sandbox/journal`, {
          headers: { "x-admin-key": "wrong-admin-key-1d2e" }
        })
        expect(wrong.status).toBe(403)
        // the token endpoint, with the secret in a Basic header
        const basicToken = yield* tokenRequest(server, { grant_type: "client_credentials" }, {
          authorization: basicHeader
        })
        expect(basicToken.status).toBe(200)
        // the exchange API: bearer token and x-api-key on every call
        const token = yield* tokenFor(server)
        const headers = exchangeHeaders(token)
        expect((yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers })).status).toBe(200)
        const created = yield* postQuote(server, headers, quoteBody(TestData.Cards.instant))
        expect(created.status).toBe(201)
        expect((yield* getTransaction(server, exchangeHeaders(token), created.body.transactionId)).status).toBe(200)
        // a refused token and a wrong key
        const refused = yield* call(`${server.baseUrl}${Routes.heartbeatPath}`, {
          headers: { ...exchangeHeaders(token), authorization: `Bearer ${token}x`, "x-api-key": "wrong-api-key-9b8c" }
        })
        expect(refused.status).toBe(401)
        return [
          adminKey,
          "wrong-admin-key-1d2e",
          "wrong-api-key-9b8c",
          TestData.partner.apiKey,
          token,
          token.split(".")[2]!,
          basicToken.body.access_token as string,
          basicHeader.slice("Basic ".length),
          TestData.agentPartner.clientSecret
        ]
      }).pipe(Effect.scoped, Effect.withTracer(capturing))

      const attributes = spans.map((span) => ({ name: span.name, attributes: Object.fromEntries(span.attributes) }))
      const server = attributes.filter((span) => span.attributes["http.request.method"] !== undefined)
      // one server span per request
      expect(server).toHaveLength(9)
      // the headers are there, their values redacted
      const headerValues = (name: string) =>
        server.flatMap((span) => {
          const value = span.attributes[`http.request.header.${name}`]
          return value === undefined ? [] : [value]
        })
      expect(headerValues("x-admin-key")).toEqual(["<redacted>", "<redacted>", "<redacted>"])
      expect(headerValues("authorization")).toHaveLength(5)
      expect(new Set(headerValues("authorization"))).toEqual(new Set(["<redacted>"]))
      expect(headerValues("x-api-key")).toHaveLength(4)
      expect(new Set(headerValues("x-api-key"))).toEqual(new Set(["<redacted>"]))
      const text = JSON.stringify(attributes, (_, value) => typeof value === "bigint" ? String(value) : value)
      for (const secret of secrets) expect(text).not.toContain(secret)
    }))
})

describe("quiet sandbox", () => {
  it.live("logLevel None logs nothing, even with every level enabled", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ message }) => {
        lines.push(String(message))
      })
      yield* Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const token = yield* tokenFor(server)
        const created = yield* postQuote(server, exchangeHeaders(token), quoteBody(TestData.Cards.success))
        expect(created.status).toBe(201)
      }).pipe(
        Effect.provide(Sandbox.layer({ timeScale: 0.01, logLevel: "None" })),
        Effect.provide(Logger.layer([capture])),
        Effect.provideService(References.MinimumLogLevel, "All")
      )
      expect(lines).toEqual([])
    }))
})
