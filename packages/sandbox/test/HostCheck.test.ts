/**
 * Issue 20, item 3 (DNS rebinding): a page on another origin whose name
 * resolves to 127.0.0.1 reaches the sandbox with its own name in `Host`. The
 * sandbox serves only the Host names that are its own (loopback names, its
 * bound address, the allowed hosts) and has no well-known admin key.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Routes } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { ConfigProvider, Effect, Logger, Option, Redacted } from "effect"
import * as Net from "node:net"
import {
  admin,
  credentialsForm,
  exchangeHeaders,
  quoteBody,
  rawRequest,
  type Reply,
  takenPort,
  tokenFor,
  tokenRequest
} from "./helpers.js"

/** The admin key every sandbox had before issue 20. */
const oldDefaultKey = "sandbox-admin-key"

/** A 421 with a short plain-text body that says what to do. */
const expectMisdirected = (reply: Reply, host: string) => {
  expect(reply.status, host).toBe(421)
  expect(reply.headers.get("content-type"), host).toMatch(/^text\/plain/)
  expect(reply.text.length, host).toBeLessThan(200)
  expect(reply.text, host).toContain("--allowed-host")
}

const portOf = (url: string): string => new URL(url).port

/** A GET of the OpenAPI document with the given Host header. */
const openApiWithHost = (server: Sandbox.Service, host: string) =>
  rawRequest(server.baseUrl, "GET", "/openapi.json", { host })

layer(
  Sandbox.layer({ timeScale: 0.01, authPort: 0, allowedHosts: ["gcx.test"], logLevel: "None" }),
  { excludeTestServices: true }
)("the Host check", (it) => {
  it.effect("a foreign Host gets 421 on every route, whatever the credentials, and changes nothing", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      yield* server.reset
      const token = yield* tokenFor(server)
      const key = { "x-admin-key": server.adminKey, "content-type": "application/json" }
      for (const host of [`evil.example:${portOf(server.baseUrl)}`, "evil.example:4710", "evil.example"]) {
        const replies = [
          yield* rawRequest(
            server.authUrl,
            "POST",
            Routes.tokenPath,
            { host, "content-type": "application/x-www-form-urlencoded" },
            new URLSearchParams(credentialsForm()).toString()
          ),
          yield* rawRequest(server.baseUrl, "GET", Routes.heartbeatPath, { ...exchangeHeaders(token), host }),
          yield* rawRequest(
            server.baseUrl,
            "POST",
            Routes.quotePath(server.stage),
            { ...exchangeHeaders(token), host },
            quoteBody(TestData.Cards.instant)
          ),
          yield* rawRequest(server.baseUrl, "GET", "/openapi.json", { host }),
          yield* rawRequest(server.baseUrl, "GET", "/docs", { host }),
          yield* rawRequest(server.baseUrl, "GET", "/__sandbox/ui", { host }),
          yield* rawRequest(server.baseUrl, "GET", "/__sandbox/transactions", { ...key, host }),
          yield* rawRequest(server.baseUrl, "GET", "/__sandbox/journal", { ...key, host }),
          yield* rawRequest(
            server.baseUrl,
            "PUT",
            "/__sandbox/faults",
            { ...key, host },
            "[{\"route\":\"any\",\"kind\":\"status500\"}]"
          ),
          yield* rawRequest(server.baseUrl, "POST", `/__sandbox/partners/${TestData.partner.clientId}/disable`, {
            ...key,
            host
          }),
          yield* rawRequest(server.baseUrl, "GET", "/nowhere", { host })
        ]
        for (const reply of replies) expectMisdirected(reply, host)
        // no card data, transaction or journal entry in what the page gets
        for (const reply of replies) expect(reply.text).not.toContain("transactionId")
      }
      // nothing changed: no fault rule, the partner is enabled, no transaction, only the first token journaled
      expect((yield* admin(server, "GET", "/faults")).body).toEqual([])
      expect((yield* tokenRequest(server, credentialsForm())).status).toBe(200)
      expect(yield* server.transactions).toEqual([])
      const journal = yield* server.journal
      expect(journal.entries.map((entry) => entry.route)).toEqual(["token", "admin", "token"])
    }))

  it.effect("loopback names, the bound address and an allowed host are served, in any case, with any port and one trailing dot", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const port = portOf(server.baseUrl)
      const served = [
        `127.0.0.1:${port}`,
        `localhost:${port}`,
        `[::1]:${port}`,
        "localhost",
        "127.0.0.1",
        "LOCALHOST:1",
        "Localhost.",
        `localhost.:${port}`,
        "127.0.0.1.:80",
        "[0:0:0:0:0:0:0:1]:80",
        "gcx.test",
        `GCX.Test.:${port}`
      ]
      for (const host of served) expect((yield* openApiWithHost(server, host)).status, host).toBe(200)
      const token = yield* rawRequest(
        server.authUrl,
        "POST",
        Routes.tokenPath,
        { host: `gcx.test:${portOf(server.authUrl)}`, "content-type": "application/x-www-form-urlencoded" },
        new URLSearchParams(credentialsForm()).toString()
      )
      expect(token.status).toBe(200)
      expect(server.hosts).toEqual(["localhost", "127.0.0.1", "[::1]", "gcx.test"])
    }))

  it.effect("names that only look like a served one are refused", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const refused = [
        "localhost.evil.example",
        "127.0.0.1.nip.io",
        "evil.localhost",
        "sub.gcx.test",
        "gcx.test.evil.example",
        "localhost..",
        "localhost:4710@evil.example",
        "evil.example@localhost",
        "localhost/evil",
        "localhost:x",
        "[::1]evil",
        "127.0.0.2"
      ]
      for (const host of refused) expectMisdirected(yield* openApiWithHost(server, host), host)
    }))

  it.effect("a request without a Host header, or with an empty one, is refused", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const url = new URL(server.baseUrl)
      // written on a socket: node:http would add its own Host
      const send = (head: string) =>
        Effect.callback<string, Error>((resume) => {
          const socket = Net.connect(Number(url.port), url.hostname)
          const chunks: Array<Buffer> = []
          socket.on("connect", () => socket.end(`${head}\r\n\r\n`))
          socket.on("data", (chunk: Buffer) => chunks.push(chunk))
          socket.on("error", (error) => resume(Effect.fail(error)))
          socket.on("close", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
          return Effect.sync(() => socket.destroy())
        })
      for (const head of ["GET /openapi.json HTTP/1.0", "GET /openapi.json HTTP/1.1\r\nhost: \r\nconnection: close"]) {
        expect(yield* send(head), head).toMatch(/^HTTP\/1\.1 421 /)
      }
    }))
})

describe("the bound address", () => {
  it.live("a sandbox bound to 127.0.0.2 serves Host 127.0.0.2; one bound to 127.0.0.1 does not", () =>
    Effect.gen(function*() {
      const other = yield* Sandbox.make({ host: "127.0.0.2", logLevel: "None" })
      const usual = yield* Sandbox.make({ logLevel: "None" })
      expect(other.baseUrl).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/)
      expect(other.hosts).toContain("127.0.0.2")
      expect((yield* openApiWithHost(other, `127.0.0.2:${portOf(other.baseUrl)}`)).status).toBe(200)
      expectMisdirected(yield* openApiWithHost(usual, `127.0.0.2:${portOf(usual.baseUrl)}`), "127.0.0.2")
    }).pipe(Effect.scoped))
})

describe("the admin key", () => {
  it.live("each start draws a random key of its own; the old default key is refused", () =>
    Effect.gen(function*() {
      const first = yield* Sandbox.make({ logLevel: "None" })
      const second = yield* Sandbox.make({ logLevel: "None" })
      for (const server of [first, second]) {
        expect(server.adminKey).toMatch(/^[A-Za-z0-9_-]{32,}$/)
        expect((yield* admin(server, "GET", "/journal")).status).toBe(200)
        const old = yield* admin({ ...server, adminKey: oldDefaultKey }, "GET", "/journal")
        expect(old.status).toBe(403)
      }
      expect(first.adminKey).not.toBe(second.adminKey)
      expect((yield* admin({ ...second, adminKey: first.adminKey }, "GET", "/journal")).status).toBe(403)
    }).pipe(Effect.scoped))

  it.live("the banner's dashboard URL carries the key in its fragment", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.make({ logLevel: "None", adminKey: "a key/with+odd#chars" })
      const url = `${server.baseUrl}/__sandbox/ui#key=a%20key%2Fwith%2Bodd%23chars`
      expect(Sandbox.dashboardUrl(server)).toBe(url)
      expect(Sandbox.banner(server)).toContain(`  Dashboard    ${url}\n`)
      expect(Sandbox.banner(server)).toContain("  Host names   localhost, 127.0.0.1, [::1] ")
    }).pipe(Effect.scoped))

  it.live("a non-loopback host without an admin key is refused before anything listens", () =>
    Effect.gen(function*() {
      // the port is taken on 127.0.0.1, so that listening on 0.0.0.0 would fail with EADDRINUSE
      const port = yield* takenPort
      for (const host of ["0.0.0.0", "::", "192.0.2.10", "gcx.test"]) {
        const error = yield* Effect.flip(Sandbox.make({ host, port, logLevel: "None" }))
        expect(error._tag, host).toBe("SandboxOptionsError")
        expect(error.message, host).toContain(`${host} is not a loopback address`)
        expect(error.message, host).toContain("--admin-key")
        expect(error.message, host).toContain(Sandbox.adminKeyVariable)
      }
    }).pipe(Effect.scoped))

  it.live("a non-loopback host with an admin key logs a warning (without the key); the banner shows the bound address", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const capture = Logger.make(({ logLevel, message }) => {
        logs.push(`${logLevel.toUpperCase()} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      })
      const adminKey = "explicit-admin-key-5c1d"
      const server = yield* Sandbox.make({ host: "0.0.0.0", adminKey, logLevel: "None" }).pipe(
        Effect.provide(Logger.layer([capture]))
      )
      const port = portOf(server.baseUrl)
      expect(server.baseUrl).toBe(`http://127.0.0.1:${port}`)
      expect(server.boundAddress).toBe(`0.0.0.0:${port}`)
      expect(Sandbox.banner(server)).toContain(`  Listening    0.0.0.0:${port} (every interface`)
      expect(logs).toHaveLength(1)
      expect(logs[0]).toMatch(/^WARN .*0\.0\.0\.0.*other machines/)
      expect(logs.join("\n")).not.toContain(adminKey)
      expect((yield* openApiWithHost(server, `127.0.0.1:${port}`)).status).toBe(200)
      expectMisdirected(yield* openApiWithHost(server, "evil.example"), "evil.example")
    }).pipe(Effect.scoped))

  it.live("an empty admin key or an allowed host that is not a host name is refused with what to do", () =>
    Effect.gen(function*() {
      const empty = yield* Effect.flip(Sandbox.make({ adminKey: " ", logLevel: "None" }))
      expect(empty).toMatchObject({ _tag: "SandboxOptionsError", message: expect.stringContaining("admin key") })
      for (const host of ["http://gcx.test", "gcx.test/x", "", "gcx test"]) {
        const error = yield* Effect.flip(Sandbox.make({ allowedHosts: [host], logLevel: "None" }))
        expect(error._tag, host).toBe("SandboxOptionsError")
        expect(error.message, host).toContain("allowed host")
      }
    }).pipe(Effect.scoped))

  it.effect("GCX_SANDBOX_ADMIN_KEY is read as a redacted value", () =>
    Effect.gen(function*() {
      const key = yield* Sandbox.adminKeyConfig
      expect(String(key)).not.toContain("secret-value")
      expect(Option.map(key, Redacted.value)).toEqual(Option.some("secret-value"))
    }).pipe(
      Effect.provideService(
        ConfigProvider.ConfigProvider,
        ConfigProvider.fromEnv({ env: { [Sandbox.adminKeyVariable]: "secret-value" } })
      )
    ))
})
