/**
 * Issue 15, items 1 and 2, over real HTTP and both transports: a hostile
 * server that redirects cannot send a request to another host, and one that
 * sends a huge body cannot make the client read it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import { Effect } from "effect"
import type * as Http from "node:http"
import {
  card,
  clientLayer,
  type Handler,
  optionsFor,
  requestsOf,
  server,
  service,
  transactionId,
  transports
} from "./hostile.js"

const redirectStatuses = [301, 302, 307, 308] as const

/** A route answered with a redirect to the same path on `target`. */
const redirecting = (status: number, target: () => string): Handler => (request, response) => {
  response.writeHead(status, { location: `${target()}${request.url}`, "content-type": "text/plain" })
  response.end("moved")
}

const calls: Record<
  "getTransaction" | "createQuote" | "token",
  (client: ExchangeClient.Service) => Effect.Effect<unknown, ExchangeClient.ClientError | Errors.InvalidCardInput>
> = {
  getTransaction: (client) => client.getTransaction(transactionId),
  createQuote: (client) => client.createQuote(card),
  token: (client) => client.heartbeat
}

describe("redirects are never followed", () => {
  for (const [transport, http] of transports) {
    for (const route of ["getTransaction", "createQuote", "token"] as const) {
      for (const status of redirectStatuses) {
        it.live(`${transport}: ${route} answered ${status} fails and sends nothing to the Location's host`, () =>
          Effect.gen(function*() {
            const elsewhere = yield* server(service())
            const hostile = yield* server(service({ [route]: redirecting(status, () => elsewhere.url) }))
            const error = yield* ExchangeClient.ExchangeClient.pipe(
              Effect.flatMap(calls[route]),
              Effect.flip,
              Effect.provide(clientLayer(optionsFor(hostile.url), http))
            )
            expect(elsewhere.requests).toEqual([])
            expect(error._tag).toBe(route === "token" ? "TokenError" : "UnexpectedResponse")
            expect(error.message).toContain(`HTTP ${status} redirect to "${elsewhere.url}/`)
            expect(error.message).toContain("never follows redirects")
            if (error._tag === "UnexpectedResponse") {
              expect(error).toMatchObject({ reason: "Redirect", httpStatus: status, attempts: 1 })
            }
            // not retried: a redirect is not transient
            expect(requestsOf(hostile, route).length).toBe(1)
          }).pipe(Effect.scoped))
      }
    }
  }
})

const fiftyMegabytes = 50 * 1024 * 1024
const chunk = Buffer.alloc(64 * 1024, "x")

/**
 * Answers with `total` bytes, chunked or with a content-length, honouring
 * backpressure; `sent` counts the bytes handed to the socket.
 */
const huge = (status: number, chunked: boolean, counter: { sent: number }): Handler => (_, response) => {
  response.writeHead(status, {
    "content-type": "application/json",
    ...(chunked ? {} : { "content-length": String(fiftyMegabytes) })
  })
  let closed = false
  response.on("close", () => {
    closed = true
  })
  const pump = () => {
    while (!closed && counter.sent < fiftyMegabytes) {
      const part = chunk.subarray(0, Math.min(chunk.length, fiftyMegabytes - counter.sent))
      counter.sent += part.length
      if (!response.write(part)) return void response.once("drain", pump)
    }
    if (!closed) response.end()
  }
  pump()
}

/** The most a reader that stops at the cap lets the server send: the cap, and the socket buffers on both sides. */
const boundedSend = 16 * 1024 * 1024

describe("answers are read up to a cap", () => {
  for (const [transport, http] of transports) {
    for (const chunked of [true, false]) {
      const framing = chunked ? "chunked" : "with a content-length"
      it.live(`${transport}: a 50 MB GET answer ${framing} fails with UnexpectedResponse, unread`, () =>
        Effect.gen(function*() {
          const counter = { sent: 0 }
          const hostile = yield* server(service({ getTransaction: huge(200, chunked, counter) }))
          const error = yield* ExchangeClient.ExchangeClient.pipe(
            Effect.flatMap(calls.getTransaction),
            Effect.flip,
            Effect.provide(clientLayer(optionsFor(hostile.url), http))
          )
          expect(error).toBeInstanceOf(Errors.UnexpectedResponse)
          expect(error).toMatchObject({ reason: "TooLarge", httpStatus: 200, attempts: 1 })
          expect(error.message).toContain("larger than 1048576 bytes")
          expect(counter.sent).toBeLessThan(boundedSend)
        }).pipe(Effect.scoped))
    }

    it.live(`${transport}: a POST answered with 50 MB is retried with its requestId and previousAttempts + 1`, () =>
      Effect.gen(function*() {
        const counter = { sent: 0 }
        let posts = 0
        const hostile = yield* server(service({
          createQuote: (request, response) =>
            (posts += 1) === 1
              ? huge(201, true, counter)(request, response)
              : service()(request, response)
        }))
        const created = yield* ExchangeClient.ExchangeClient.pipe(
          Effect.flatMap((client) => client.createQuote(card)),
          Effect.provide(clientLayer(optionsFor(hostile.url), http))
        )
        expect(created).toMatchObject({ transactionId, attempts: 2 })
        const sent = requestsOf(hostile, "createQuote").map((request) => [
          request.headers.requestid,
          request.headers.previousattempts
        ])
        expect(sent).toEqual([[created.requestId, "0"], [created.requestId, "1"]])
        expect(counter.sent).toBeLessThan(boundedSend)
      }).pipe(Effect.scoped))
  }

  it.live("the cap is an option: an answer within it is read, one byte more is not", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({
        entityid: transactionId,
        response: { transactionId, isCompleted: false }
      })
      const hostile = yield* server(service({
        getTransaction: (_, response: Http.ServerResponse) => {
          response.writeHead(200, { "content-type": "application/json" }) // chunked
          response.end(body)
        }
      }))
      const get = (maxResponseBytes: number) =>
        ExchangeClient.ExchangeClient.pipe(
          Effect.flatMap(calls.getTransaction),
          Effect.result,
          Effect.provide(clientLayer(optionsFor(hostile.url, { maxResponseBytes })))
        )
      const exact = Buffer.byteLength(body)
      expect((yield* get(exact))._tag).toBe("Success")
      const over = yield* get(exact - 1)
      expect(over._tag === "Failure" && over.failure).toMatchObject({ _tag: "UnexpectedResponse", reason: "TooLarge" })
    }).pipe(Effect.scoped))
})
