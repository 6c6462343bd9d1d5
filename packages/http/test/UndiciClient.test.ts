/**
 * gcx's undici client over real HTTP: a `node:http` server on loopback per test. What the hostile
 * server suites check through the exchange client (redirects, capped bodies, resets) runs over this
 * client too (`packages/poller/test/hostile.ts`); these tests check the `HttpClient` contract itself.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Layer, Schedule, type Scope, Stream } from "effect"
import { HttpBody, HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as Transport from "../src/internal/transport.js"
import * as UndiciClient from "../src/UndiciClient.js"
import * as Fixtures from "./fixtures.js"

interface Received {
  readonly method: string
  readonly url: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** A server on 127.0.0.1 answering with `handler`, closed with the scope; `received` lists its requests. */
const serve = (handler: (request: Received, response: Http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: Http.Server; readonly url: string; readonly received: Array<Received> }>(
      (resume) => {
        const received: Array<Received> = []
        const server = Http.createServer((request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            const entry = {
              method: request.method ?? "",
              url: request.url ?? "",
              headers: request.headers,
              body: Buffer.concat(chunks).toString("utf8")
            }
            received.push(entry)
            handler(entry, response)
          })
        })
        server.listen(0, "127.0.0.1", () =>
          resume(Effect.succeed({
            server,
            received,
            url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`
          })))
      }
    ),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** The client, its layer built for the test. */
const client = Effect.service(HttpClient.HttpClient)

/** Runs a test with its servers closed and the client's layer released at its end. */
const withClient = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient | Scope.Scope>) =>
  effect.pipe(Effect.scoped, Effect.provide(UndiciClient.layer))

/** `size` bytes of `a` to `z`, written in chunks of 16 KiB without a content-length. */
const pattern = (size: number) => Buffer.alloc(size, "abcdefghijklmnopqrstuvwxyz")

/** Writes `body` as it drains; returns how many bytes were handed to the socket so far. */
const writeChunked = (response: Http.ServerResponse, body: Buffer): () => number => {
  response.writeHead(200, { "content-type": "text/plain" })
  let offset = 0
  const next = () => {
    while (offset < body.length) {
      const chunk = body.subarray(offset, offset + 16 * 1024)
      offset += chunk.length
      if (!response.write(chunk)) return response.once("drain", next)
    }
    response.end()
  }
  next()
  return () => offset
}

const reasonOf = (exit: Exit.Exit<unknown, unknown>) => {
  const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  return HttpClientError.isHttpClientError(error) ? error.reason : undefined
}

describe("UndiciClient", () => {
  it.live("sends the method, path, query, headers and body, and reads the status, headers, cookies and body", () =>
    Effect.gen(function*() {
      const server = yield* serve((_, response) => {
        response.setHeader("set-cookie", ["a=1", "b=2"])
        response.setHeader("x-many", ["one", "two"])
        response.writeHead(201, { "content-type": "application/json" })
        response.end(JSON.stringify({ ok: true, n: 1 }))
      })
      const http = yield* client
      const response = yield* http.execute(
        HttpClientRequest.post(`${server.url}/quotes?x=1#frag`).pipe(
          HttpClientRequest.setHeader("x-api-key", "key"),
          HttpClientRequest.bodyJsonUnsafe({ card: "c" })
        )
      )
      expect(server.received[0]).toMatchObject({
        method: "POST",
        url: "/quotes?x=1",
        body: JSON.stringify({ card: "c" })
      })
      expect(server.received[0]!.headers["x-api-key"]).toBe("key")
      expect(server.received[0]!.headers["content-type"]).toBe("application/json")
      expect(response.status).toBe(201)
      expect(response.url).toBe(`${server.url}/quotes?x=1`)
      expect(response.headers["x-many"]).toBe("one, two")
      expect(Object.keys(response.cookies.cookies).sort()).toEqual(["a", "b"])
      expect(yield* response.json).toEqual({ ok: true, n: 1 })
      // A body read whole can be read again, in any form.
      expect(yield* response.text).toBe(JSON.stringify({ ok: true, n: 1 }))
      expect(new TextDecoder().decode(yield* response.arrayBuffer)).toBe(JSON.stringify({ ok: true, n: 1 }))
    }).pipe(withClient))

  it.live("reads a large chunked body whole, or as a stream, byte for byte", () =>
    Effect.gen(function*() {
      const body = pattern(3 * 1024 * 1024 + 7)
      const server = yield* serve((_, response) => writeChunked(response, body))
      const http = yield* client
      const whole = yield* Effect.flatMap(http.get(server.url), (response) => response.arrayBuffer)
      expect(Buffer.from(whole).equals(body)).toBe(true)
      const chunks = yield* Effect.flatMap(http.get(server.url), (response) => Stream.runCollect(response.stream))
      expect(Buffer.concat(chunks).equals(body)).toBe(true)
      expect(chunks.length).toBeGreaterThan(1)
    }).pipe(withClient))

  it.live("pauses an unread body past its high-water mark, and resumes it when it is read", () =>
    Effect.gen(function*() {
      const body = pattern(64 * 1024 * 1024)
      const written = yield* Deferred.make<number>()
      const server = yield* serve((_, response) => {
        const handed = writeChunked(response, body)
        // What the server could hand to the socket while the client did not read.
        setTimeout(() => Deferred.doneUnsafe(written, Exit.succeed(handed())), 500)
      })
      const http = yield* client
      const response = yield* http.get(server.url)
      const before = yield* Deferred.await(written)
      // Far less than the body: the client's 64 KiB and the sockets' buffers (a few MiB on loopback).
      expect(before).toBeLessThan(body.length / 4)
      const text = yield* response.text
      expect(text.length).toBe(body.length)
      expect(Buffer.from(text).equals(body)).toBe(true)
    }).pipe(withClient))

  it.live("ending a body's stream early closes the connection, while the request's scope is still open", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<boolean>()
      const server = yield* serve((_, response) => {
        response.once("close", () => Deferred.doneUnsafe(closed, Exit.succeed(response.writableFinished)))
        writeChunked(response, pattern(16 * 1024 * 1024))
      })
      // A scoped request is aborted by its scope, not by `HttpClient.make`'s wrapper: the test's scope
      // stays open, so only the stream's own ending can close the connection.
      const http = HttpClient.withScope(yield* client)
      const first = yield* Effect.flatMap(http.get(server.url), (response) => Stream.runHead(response.stream))
      expect(first._tag).toBe("Some")
      // Closed before the server could finish writing the body.
      expect(yield* Deferred.await(closed).pipe(Effect.timeout("5 seconds"))).toBe(false)
      expect(server.received).toHaveLength(1)
    }).pipe(withClient))

  it.live("two paused bodies read at the same time, whole or as merged streams, arrive whole", () =>
    Effect.gen(function*() {
      const body = pattern(8 * 1024 * 1024)
      const server = yield* serve((_, response) => writeChunked(response, body))
      const http = yield* client
      // Both left unread long enough to be paused, then read together.
      const [a, b] = yield* Effect.all([http.get(server.url), http.get(server.url)])
      yield* Effect.sleep("200 millis")
      const [textA, textB] = yield* Effect.all([a.text, b.text], { concurrency: 2 })
      expect(textA.length + textB.length).toBe(2 * body.length)
      expect(Buffer.from(textA).equals(body) && Buffer.from(textB).equals(body)).toBe(true)
      const [c, d] = yield* Effect.all([http.get(server.url), http.get(server.url)])
      yield* Effect.sleep("200 millis")
      const bytes = yield* Stream.runFold(Stream.merge(c.stream, d.stream), () => 0, (sum, chunk) => sum + chunk.length)
      expect(bytes).toBe(2 * body.length)
    }).pipe(withClient))

  it.live("a body is read whole any number of times, or once as a stream: any other mix is a DecodeError", () =>
    Effect.gen(function*() {
      const server = yield* serve((_, response) => response.end("body"))
      const http = yield* client
      const whole = yield* http.get(server.url)
      expect(yield* whole.text).toBe("body")
      expect(reasonOf(yield* Effect.exit(Stream.runDrain(whole.stream)))?._tag).toBe("DecodeError")
      expect(yield* whole.text).toBe("body")
      const streamed = yield* http.get(server.url)
      expect(Buffer.concat(yield* Stream.runCollect(streamed.stream)).toString()).toBe("body")
      expect(reasonOf(yield* Effect.exit(streamed.text))?._tag).toBe("DecodeError")
      expect(reasonOf(yield* Effect.exit(Stream.runDrain(streamed.stream)))?._tag).toBe("DecodeError")
    }).pipe(withClient))

  it.live("a request given up while it waits for a connection leaves the connection in use alone", () =>
    Effect.gen(function*() {
      let connections = 0
      const server = yield* serve((request, response) => {
        if (request.url === "/slow") setTimeout(() => response.end("slow"), 300)
        else response.end("fast")
      })
      server.server.on("connection", () => connections++)
      const text = (path: string) => Effect.flatMap(HttpClient.get(`${server.url}${path}`), (response) => response.text)
      const [slow, queued] = yield* Effect.all([
        text("/slow"),
        // Queued behind /slow on the one connection, and given up before it gets it.
        Effect.sleep("20 millis").pipe(Effect.andThen(text("/queued")), Effect.timeout("50 millis"), Effect.exit)
      ], { concurrency: 2 })
      expect(slow).toBe("slow")
      expect(Exit.isFailure(queued)).toBe(true)
      expect(yield* text("/after")).toBe("fast")
      // The given-up request was never sent, and the connection went on serving.
      expect(server.received.map((request) => request.url)).toEqual(["/slow", "/after"])
      expect(connections).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(UndiciClient.layerOptions({ connections: 1 }))))

  it.live("an interrupted request is aborted: the server sees its connection close", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      const server = yield* serve((_, response) => {
        response.once("close", () => Deferred.doneUnsafe(closed, Exit.void))
      })
      const http = yield* client
      const exit = yield* http.get(server.url).pipe(Effect.timeout("100 millis"), Effect.exit)
      expect(Exit.isFailure(exit)).toBe(true)
      yield* Deferred.await(closed).pipe(Effect.timeout("5 seconds"))
    }).pipe(withClient))

  it.live("a refused connection fails with a TransportError that keeps the code of its cause", () =>
    Effect.gen(function*() {
      const url = `http://127.0.0.1:${yield* Fixtures.closedPort}`
      const http = yield* client
      const exit = yield* Effect.exit(http.get(url))
      const reason = reasonOf(exit)
      expect(reason?._tag).toBe("TransportError")
      // What gcx's transport reads of it.
      expect(Transport.reasonOf((reason as HttpClientError.TransportError).cause, "Other")).toEqual({
        reason: "Connect",
        code: "ECONNREFUSED"
      })
    }).pipe(withClient))

  it.live("a body cut off by a reset fails its read with a DecodeError that has the response", () =>
    Effect.gen(function*() {
      const server = yield* serve((_, response) => {
        response.writeHead(200, { "content-length": "1000" })
        response.write("partial")
        setTimeout(() => response.socket?.destroy(), 20)
      })
      const http = yield* client
      const response = yield* http.get(server.url)
      expect(response.status).toBe(200)
      const reason = reasonOf(yield* Effect.exit(response.text))
      expect(reason?._tag).toBe("DecodeError")
      expect((reason as HttpClientError.DecodeError).response.status).toBe(200)
      expect(Transport.reasonOf((reason as HttpClientError.DecodeError).cause, "Other").reason).toBe("Reset")
    }).pipe(withClient))

  it.live("a body that is not JSON fails `json` with a DecodeError", () =>
    Effect.gen(function*() {
      const server = yield* serve((_, response) => response.end("<html>"))
      const http = yield* client
      const reason = reasonOf(yield* Effect.exit(Effect.flatMap(http.get(server.url), (response) => response.json)))
      expect(reason?._tag).toBe("DecodeError")
    }).pipe(withClient))

  it.live("a streamed or FormData request body goes through Effect's undici client, and arrives whole", () =>
    Effect.gen(function*() {
      const server = yield* serve((request, response) => response.end(request.body))
      const http = yield* client
      const streamed = yield* http.execute(
        HttpClientRequest.post(server.url).pipe(
          HttpClientRequest.setBody(
            HttpBody.stream(Stream.make(new TextEncoder().encode("one,"), new TextEncoder().encode("two")))
          )
        )
      )
      expect(yield* streamed.text).toBe("one,two")
      const form = new FormData()
      form.append("field", "value")
      const posted = yield* http.execute(HttpClientRequest.post(server.url).pipe(HttpClientRequest.bodyFormData(form)))
      expect(yield* posted.text).toContain("value")
      expect(server.received[1]!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/)
    }).pipe(withClient))

  it.live("many requests at once share the dispatcher's connections", () =>
    Effect.gen(function*() {
      let connections = 0
      const server = yield* serve((request, response) => response.end(request.url))
      server.server.on("connection", () => connections++)
      const http = yield* client
      const bodies = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, index) => index),
        (index) => Effect.flatMap(http.get(`${server.url}/${index}`), (response) => response.text),
        { concurrency: 32 }
      )
      expect(bodies).toEqual(Array.from({ length: 200 }, (_, index) => `/${index}`))
      // Kept alive and used again: far fewer connections than requests.
      expect(connections).toBeGreaterThan(0)
      expect(connections).toBeLessThan(100)
    }).pipe(withClient))

  it.live("the layer's dispatcher is closed with the layer: no connection is left open", () =>
    Effect.gen(function*() {
      const server = yield* serve((_, response) => response.end("ok"))
      const connections = Effect.callback<number>((resume) => {
        server.server.getConnections((_, count) => resume(Effect.succeed(count)))
      })
      const text = yield* Effect.flatMap(HttpClient.get(server.url), (response) => response.text).pipe(
        Effect.provide(Layer.fresh(UndiciClient.layer))
      )
      expect(text).toBe("ok")
      const left = yield* connections.pipe(
        Effect.repeat({ until: (count) => count === 0, schedule: Schedule.spaced("20 millis"), times: 100 })
      )
      expect(left).toBe(0)
    }).pipe(Effect.scoped))
})
