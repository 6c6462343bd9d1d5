/**
 * The token cache, driven by `TestClock` through a scripted `HttpClient`: no
 * network, so that expiry and refresh-ahead are exact. The same behaviour over
 * real HTTP is covered against the sandbox in `ExchangeClient.test.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { ExchangeConfig, TokenProvider } from "@gcx/http"
import { Deferred, Effect, Fiber, Layer, Option, Redacted, Ref, Result, Schedule } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"

interface Sent {
  readonly url: string
  readonly authorization: string | undefined
  readonly form: Record<string, string>
}

interface Answer {
  readonly status: number
  readonly body: unknown
  readonly headers?: Record<string, string>
}

const token = (accessToken: string, expiresIn = 3600): Answer => ({
  status: 200,
  body: { access_token: accessToken, expires_in: expiresIn, token_type: "Bearer" }
})

const baseOptions: ExchangeConfig.Options = {
  baseUrl: "http://api.invalid",
  authUrl: "http://auth.invalid/",
  clientId: "partner-id",
  clientSecret: "partner-secret",
  apiKey: "partner-key"
}

/**
 * A provider whose token endpoint answers `answers` in turn (the last one
 * repeats), optionally waiting for `gate` before each answer.
 */
const setup = (
  answers: ReadonlyArray<Answer>,
  options: Partial<ExchangeConfig.Options> = {},
  gate?: Deferred.Deferred<void>
) =>
  Effect.gen(function*() {
    const sent = yield* Ref.make<ReadonlyArray<Sent>>([])
    const client = HttpClient.make((request) =>
      Effect.gen(function*() {
        const body = request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : ""
        const all = yield* Ref.updateAndGet(sent, (all) => [...all, {
          url: request.url,
          authorization: request.headers["authorization"],
          form: Object.fromEntries(new URLSearchParams(body))
        }])
        if (gate) yield* Deferred.await(gate)
        const answer = answers[Math.min(all.length, answers.length) - 1]
        return HttpClientResponse.fromWeb(
          request,
          new Response(JSON.stringify(answer.body), {
            status: answer.status,
            headers: { "content-type": "application/json", ...answer.headers }
          })
        )
      })
    )
    const provider = yield* TokenProvider.make.pipe(
      Effect.provide(Layer.merge(
        ExchangeConfig.layer({ ...baseOptions, ...options }),
        Layer.succeed(HttpClient.HttpClient, client)
      ))
    )
    return { provider, sent: Ref.get(sent), count: Effect.map(Ref.get(sent), (all) => all.length) }
  })

const value = <E>(effect: Effect.Effect<Redacted.Redacted<string>, E>) => Effect.map(effect, Redacted.value)

/** Repeats `effect` (1 ms apart on the live clock, for at most 2 s) until `done` holds: for background work. */
const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, done: (a: A) => boolean) =>
  effect.pipe(
    Effect.filterOrFail(done, () => "not yet"),
    Effect.retry(Schedule.spaced("1 millis").pipe(Schedule.upTo({ duration: "2 seconds" }))),
    TestClock.withLive
  )

describe("TokenProvider", () => {
  it.effect("sends the client credentials grant with the secret in the body", () =>
    Effect.gen(function*() {
      const { provider, sent } = yield* setup([token("t1")], { scope: "rs/exchange/sandbox/full-access" })
      expect(yield* value(provider.get)).toBe("t1")
      const [request] = yield* sent
      expect(request.url).toBe("http://auth.invalid/oauth2/token")
      expect(request.authorization).toBeUndefined()
      expect(request.form).toEqual({
        grant_type: "client_credentials",
        client_id: "partner-id",
        client_secret: "partner-secret",
        scope: "rs/exchange/sandbox/full-access"
      })
    }))

  it.effect("sends the secret in a Basic header in the basic style", () =>
    Effect.gen(function*() {
      const { provider, sent } = yield* setup([token("t1")], { authStyle: "basic" })
      yield* provider.get
      const [request] = yield* sent
      expect(request.authorization).toBe(`Basic ${btoa("partner-id:partner-secret")}`)
      expect(request.form).toEqual({ grant_type: "client_credentials", client_id: "partner-id" })
    }))

  it.effect("caches the token and refreshes it ahead of expiry: max(60 s, 10 %) before", () =>
    Effect.gen(function*() {
      const { count, provider } = yield* setup([token("t1", 3600), token("t2", 3600)])
      expect(yield* value(provider.get)).toBe("t1")
      // 3600 s lifetime: refresh 360 s before expiry, at 3240 s
      yield* TestClock.adjust("3239 seconds")
      expect(yield* value(provider.get)).toBe("t1")
      expect(yield* count).toBe(1)
      yield* TestClock.adjust("1 second")
      // inside the refresh window the valid token is served while a new one is fetched
      expect(yield* value(provider.get)).toBe("t1")
      expect(yield* eventually(value(provider.get), (token) => token === "t2")).toBe("t2")
      expect(yield* count).toBe(2)
    }))

  it.effect("uses a 60 s margin for a 300 s token and half the lifetime for a very short one", () =>
    Effect.gen(function*() {
      expect(TokenProvider.refreshMargin(300_000)).toBe(60_000)
      expect(TokenProvider.refreshMargin(3_600_000)).toBe(360_000)
      expect(TokenProvider.refreshMargin(120_000)).toBe(60_000)
      expect(TokenProvider.refreshMargin(10_000)).toBe(5_000)
      expect(TokenProvider.refreshMargin(2_000)).toBe(1_000)
      const { count, provider } = yield* setup([token("t1", 10), token("t2", 10)])
      yield* provider.get
      yield* TestClock.adjust("4999 millis")
      yield* provider.get
      expect(yield* count).toBe(1)
    }))

  it.effect("an expired token is never served: callers wait for the new one", () =>
    Effect.gen(function*() {
      const { count, provider } = yield* setup([token("t1", 100), token("t2", 100)])
      expect(yield* value(provider.get)).toBe("t1")
      yield* TestClock.adjust("100 seconds")
      expect(yield* value(provider.get)).toBe("t2")
      expect(yield* count).toBe(2)
    }))

  it.effect("concurrent callers on a cold cache share one request", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { count, provider } = yield* setup([token("t1")], {}, gate)
      const fiber = yield* Effect.forkChild(Effect.all(Array.from({ length: 1000 }, () => provider.get), {
        concurrency: "unbounded"
      }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, void 0)
      const tokens = yield* Fiber.join(fiber)
      expect(new Set(tokens.map(Redacted.value))).toEqual(new Set(["t1"]))
      expect(yield* count).toBe(1)
    }))

  it.effect("a failure carries the status, the OAuth error and the trace id, and is not cached", () =>
    Effect.gen(function*() {
      const refused: Answer = {
        status: 400,
        body: { error: "invalid_client", error_description: "unknown client" },
        headers: { "SVC-TRACE-ID": "trace-1" }
      }
      // no spacing between token requests: this test is about the failure alone
      const { count, provider } = yield* setup([refused, token("t1")], { minTokenInterval: 0 })
      const error = yield* Effect.flip(provider.get)
      expect(error._tag).toBe("TokenError")
      expect(error).toMatchObject({ httpStatus: 400, oauthError: "invalid_client", traceId: "trace-1" })
      expect(error.message).toContain("invalid_client")
      expect(yield* value(provider.get)).toBe("t1")
      expect(yield* count).toBe(2)
    }))

  it.effect("a token response that does not decode is a TokenError that does not echo it", () =>
    Effect.gen(function*() {
      const { provider } = yield* setup([{ status: 200, body: { access_token: "leaked-token", token_type: "Bearer" } }])
      const error = yield* Effect.flip(provider.get)
      expect(error).toMatchObject({ _tag: "TokenError", httpStatus: 200 })
      expect(error.message).toContain("expires_in")
      expect(JSON.stringify(error)).not.toContain("leaked-token")
    }))

  it.effect("invalidate drops the token; invalidateToken only if it is still the cached one", () =>
    Effect.gen(function*() {
      const { count, provider } = yield* setup([token("t1"), token("t2"), token("t3")], { minTokenInterval: 0 })
      const t1 = yield* provider.get
      yield* provider.invalidate
      const t2 = yield* provider.get
      expect(Redacted.value(t2)).toBe("t2")
      // a stale 401 (sent with t1) does not drop t2
      yield* provider.invalidateToken(t1)
      expect(yield* value(provider.get)).toBe("t2")
      expect(yield* count).toBe(2)
      yield* provider.invalidateToken(t2)
      expect(yield* value(provider.get)).toBe("t3")
    }))

  it.effect("two token requests start at least minTokenInterval apart, whatever the lifetime", () =>
    Effect.gen(function*() {
      // a 10 ms token, refused at once by the API: without the spacing, a token request per call
      const { count, provider } = yield* setup([token("t1", 0.01), token("t2", 0.01)])
      expect(yield* value(provider.get)).toBe("t1")
      yield* provider.invalidate
      const waiting = yield* Effect.forkChild(value(provider.get))
      yield* TestClock.adjust("999 millis")
      expect(yield* count).toBe(1)
      expect(waiting.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(waiting)).toBe("t2")
      expect(yield* count).toBe(2)
    }))

  it.effect("a lifetime is capped at 24 h: expires_in 1e308 does not overflow into a request per call", () =>
    Effect.gen(function*() {
      const { count, provider } = yield* setup([token("t1", 1e308), token("t2", 3600)])
      expect(yield* value(provider.get)).toBe("t1")
      yield* TestClock.adjust("20 hours")
      expect(yield* value(provider.get)).toBe("t1")
      expect(yield* count).toBe(1)
      yield* TestClock.adjust("4 hours")
      expect(yield* value(provider.get)).toBe("t2")
    }))

  it.effect("the token never shows in the provider's printed form", () =>
    Effect.gen(function*() {
      const { provider } = yield* setup([token("secret-token-value")])
      const got = yield* provider.get
      expect(String(got)).not.toContain("secret-token-value")
      expect(JSON.stringify({ got })).not.toContain("secret-token-value")
      expect(Option.some(got).toString()).not.toContain("secret-token-value")
    }))

  it.effect("once the layer is released, get fails with a TokenError instead of waiting forever", () =>
    Effect.gen(function*() {
      const { provider } = yield* Effect.scoped(setup([token("t1")]))
      const error = yield* Effect.flip(provider.get)
      expect(error._tag).toBe("TokenError")
      expect(error.message).toContain("shut down")
    }))

  it.effect("make fails with a ConfigError when the options are malformed", () =>
    Effect.gen(function*() {
      const result = yield* Effect.result(Layer.build(ExchangeConfig.layer({ ...baseOptions, authUrl: "nope" })))
      expect(Result.isFailure(result)).toBe(true)
    }))
})
