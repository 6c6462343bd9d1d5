/**
 * Issue 15, item 5, against a real token server on loopback: bad lifetimes
 * and empty tokens are a `TokenError` before any API request, a huge lifetime
 * is capped, and however short the lifetimes, token requests stay spaced.
 */
import { describe, expect, it } from "@effect/vitest"
import { ExchangeClient } from "@gcx/http"
import { Effect } from "effect"
import { clientLayer, json, optionsFor, requestsOf, server, service, tokenAnswer } from "./hostile.js"

/** Token answers gcx must refuse, as raw JSON text (so that `1e400` reaches the client as written). */
const refused: ReadonlyArray<readonly [string, string]> = [
  ["expires_in 0", tokenAnswer({ expires_in: 0 })],
  ["a negative expires_in", tokenAnswer({ expires_in: -30 })],
  ["expires_in \"NaN\"", tokenAnswer({ expires_in: "NaN" })],
  ["expires_in 1e400", tokenAnswer({ expires_in: "__N__" }).replace("\"__N__\"", "1e400")],
  ["an empty access_token", tokenAnswer({ access_token: "" })],
  ["an access_token with a space", tokenAnswer({ access_token: "a b" })],
  ["an access_token with a line break", tokenAnswer({ access_token: "a\r\nx-injected: 1" })]
]

const heartbeats = (count: number) =>
  Effect.flatMap(ExchangeClient.ExchangeClient, (client) => Effect.replicateEffect(client.heartbeat, count))

describe("token lifetimes from a real token server", () => {
  for (const [name, body] of refused) {
    it.live(`${name} is a TokenError, and no API request is sent`, () =>
      Effect.gen(function*() {
        const hostile = yield* server(service({ token: (_, response) => json(response, 200, body) }))
        const error = yield* Effect.flip(heartbeats(1)).pipe(Effect.provide(clientLayer(optionsFor(hostile.url))))
        expect(error).toMatchObject({ _tag: "TokenError", httpStatus: 200 })
        expect(error.message).toMatch(/expires_in|access_token/)
        expect(requestsOf(hostile, "heartbeat")).toEqual([])
        // refused, not retried: the endpoint answered
        expect(requestsOf(hostile, "token").length).toBe(1)
      }).pipe(Effect.scoped))
  }

  it.live("expires_in 1e308 is capped at 24 h: one token request for every call", () =>
    Effect.gen(function*() {
      const hostile = yield* server(
        service({ token: (_, response) => json(response, 200, tokenAnswer({ expires_in: 1e308 })) })
      )
      yield* heartbeats(20).pipe(Effect.provide(clientLayer(optionsFor(hostile.url))))
      expect(requestsOf(hostile, "token").length).toBe(1)
      expect(requestsOf(hostile, "heartbeat").length).toBe(20)
    }).pipe(Effect.scoped))

  it.live("a 1 ms lifetime does not give a token request per call: requests stay minTokenInterval apart", () =>
    Effect.gen(function*() {
      const hostile = yield* server(
        service({ token: (_, response) => json(response, 200, tokenAnswer({ expires_in: 0.001 })) })
      )
      const started = performance.now()
      yield* heartbeats(6).pipe(
        Effect.provide(clientLayer(optionsFor(hostile.url, { minTokenInterval: "200 millis" })))
      )
      const elapsed = performance.now() - started
      expect(requestsOf(hostile, "heartbeat").length).toBe(6)
      // the client starts token requests at least 200 ms apart on its own clock: no more than this fit
      expect(requestsOf(hostile, "token").length).toBeLessThanOrEqual(Math.floor(elapsed / 200) + 1)
    }).pipe(Effect.scoped))
})
