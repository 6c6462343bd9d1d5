/**
 * Bearer tokens from the OAuth 2.0 client credentials grant (spec 4.1 and 5),
 * cached in a `SynchronizedRef` and refreshed ahead of expiry, with at most
 * one token request in flight: concurrent callers share it. A failed request
 * is not cached. The token is `Redacted` and never logged.
 *
 * Whatever the token endpoint says, the provider keeps its own bounds:
 * - `access_token` must be a non-empty run of visible ASCII characters (at
 *   most 16 KiB) and `expires_in` a finite positive number, else `TokenError`;
 * - a lifetime is capped at 24 hours;
 * - two token requests start at least `minTokenInterval` apart (default 1 s),
 *   whatever the reason (expiry, refresh ahead, a 401, a failed request): a
 *   caller that needs a new token sooner waits for it.
 */
import * as Errors from "@gcx/core/Errors"
import { describeParseIssue, serviceText } from "@gcx/core/Redaction"
import * as Routes from "@gcx/core/Routes"
import * as Token from "@gcx/core/Token"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import * as ExchangeConfig from "./ExchangeConfig.js"
import { refuseRedirects } from "./internal/redirects.js"
import * as ServiceText from "./internal/serviceText.js"
import * as Transport from "./internal/transport.js"
import * as Metrics from "./Metrics.js"

/** The token provider. */
export interface Service {
  /**
   * A valid access token: the cached one, or a fresh one when none is cached
   * or it has expired. Concurrent callers share one request in flight.
   */
  readonly get: Effect.Effect<Redacted.Redacted<string>, Errors.TokenError>
  /** Drops the cached token, so that the next `get` fetches a new one. */
  readonly invalidate: Effect.Effect<void>
  /**
   * Drops the cached token only if it is still `token` (the one the service
   * refused), so that many callers that saw the same 401 cause one refresh.
   */
  readonly invalidateToken: (token: Redacted.Redacted<string>) => Effect.Effect<void>
}

/** The token provider. */
export class TokenProvider extends Context.Service<TokenProvider, Service>()("@gcx/http/TokenProvider") {}

/** A token and when it must be refreshed and when it expires (epoch milliseconds, from `Clock`). */
interface Cached {
  readonly token: Redacted.Redacted<string>
  readonly refreshAt: number
  readonly expiresAt: number
}

interface State {
  readonly cached: Option.Option<Cached>
  /** The request in flight, shared by every caller that needs a new token. */
  readonly inFlight: Option.Option<Fiber.Fiber<Cached, Errors.TokenError>>
}

/**
 * How long before expiry a token is refreshed: `max(60 s, 10 % of the
 * lifetime)`, but at most half the lifetime, so that a short-lived token is
 * still used before it is refreshed, and is refreshed early enough that it does
 * not expire in flight.
 */
export const refreshMargin = (lifetimeMillis: number): number =>
  Math.min(Math.max(60_000, lifetimeMillis / 10), lifetimeMillis / 2)

/** The longest lifetime a token is kept for, whatever its `expires_in`: 24 hours. */
export const maxLifetimeMillis = 24 * 60 * 60 * 1000

/** What an access token may be: it goes into a header as it is. */
const accessTokenPattern = /^[\x21-\x7e]{1,16384}$/

const tokenError = (message: string, props: Omit<ConstructorParameters<typeof Errors.TokenError>[0], "message"> = {}) =>
  new Errors.TokenError({ message, ...props })

const decodeTokenResponse = Schema.decodeUnknownEffect(Token.TokenResponse)
const decodeOAuthError = Schema.decodeUnknownOption(Token.OAuthErrorBody)

const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text) as unknown)
  } catch {
    return Option.none()
  }
}

/** `application/x-www-form-urlencoded` encoding of one value, as RFC 6749 2.3.1 asks for Basic credentials. */
const formEncode = (value: string): string => new URLSearchParams({ v: value }).toString().slice(2)

/**
 * Requests one token. The secret goes in the form body (`body` style) or in a
 * Basic header (`basic` style), as spec 4.1 allows. The refusal carries the
 * HTTP status, the OAuth `error` code and the trace id; never the body. The
 * service's text (`error`, `error_description`) is masked and cut to 1,024
 * characters (`Redaction.serviceText`); the trace id is read with `traceIds`,
 * which keeps it only when it looks like one.
 */
export const fetchToken = (
  config: ExchangeConfig.Service,
  client: HttpClient.HttpClient,
  traceIds: ServiceText.TraceIds = ServiceText.traceIds("the token endpoint")
): Effect.Effect<Token.TokenResponse, Errors.TokenError> => {
  const form: Record<string, string> = {
    grant_type: "client_credentials",
    client_id: config.clientId,
    ...(config.authStyle === "body" ? { client_secret: Redacted.value(config.clientSecret) } : {}),
    ...Option.match(config.scope, { onNone: () => ({}), onSome: (scope) => ({ scope }) })
  }
  const request = HttpClientRequest.post(`${config.authUrl}${Routes.tokenPath}`).pipe(
    HttpClientRequest.acceptJson,
    config.authStyle === "basic"
      ? HttpClientRequest.basicAuth(
        formEncode(config.clientId),
        Redacted.make(formEncode(Redacted.value(config.clientSecret)))
      )
      : identity,
    HttpClientRequest.bodyUrlParams(form)
  )
  return Transport.send(
    client,
    request,
    { timeout: config.requestTimeout, maxResponseBytes: config.maxResponseBytes, traceIds },
    {}
  ).pipe(
    Transport.redacting([...Transport.secretHeaderNames, ...Transport.serviceTextHeaderNames]),
    Metrics.timeRequest("token"),
    Effect.mapError((error) =>
      error._tag === "TransportError"
        ? tokenError(`the token endpoint gave no answer: ${error.message}`)
        : tokenError(`the token endpoint's answer was refused: ${error.message}`, {
          ...(error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {}),
          ...(error.traceId !== undefined ? { traceId: error.traceId } : {})
        })
    ),
    Effect.flatMap((answer) => {
      const traceId = answer.traceId
      const known = { httpStatus: answer.status, ...(traceId !== undefined ? { traceId } : {}) }
      if (!Transport.isSuccess(answer.status)) {
        const oauth = Option.flatMap(parseJson(answer.body), decodeOAuthError)
        return Effect.fail(Option.match(oauth, {
          onNone: () => tokenError(`the token endpoint refused the request with HTTP ${answer.status}`, known),
          onSome: (body) => {
            const oauthError = serviceText(body.error)
            return tokenError(
              `the token endpoint refused the request with HTTP ${answer.status}: ${oauthError}${
                body.error_description === undefined ? "" : ` (${serviceText(body.error_description)})`
              }`,
              { ...known, oauthError }
            )
          }
        }))
      }
      return Option.match(parseJson(answer.body), {
        onNone: () => Effect.fail(tokenError("the token response is not JSON", known)),
        onSome: (json) =>
          decodeTokenResponse(json).pipe(
            Effect.mapError((error) =>
              tokenError(`the token response did not decode: ${describeParseIssue(error.issue)}`, known)
            ),
            Effect.filterOrFail(
              (response) => response.expires_in > 0,
              () => tokenError("the token response's expires_in is not a positive number of seconds", known)
            ),
            Effect.filterOrFail(
              (response) => accessTokenPattern.test(Redacted.value(response.access_token)),
              () =>
                tokenError(
                  "the token response's access_token is empty, too long or not made of visible ASCII characters",
                  known
                )
            )
          )
      })
    }),
    Effect.tap(() => Metrics.recordTokenFetch(undefined)),
    Effect.tapError(Metrics.recordTokenFetch),
    Effect.tap((response) => Effect.annotateCurrentSpan("expiresIn", response.expires_in)),
    Effect.tapError((error) => Effect.annotateCurrentSpan("httpStatus", error.httpStatus ?? 0)),
    Effect.withSpan("TokenProvider.fetchToken", { attributes: { authStyle: config.authStyle } })
  )
}

/**
 * Builds the provider. Token requests run in the layer's scope, so that a
 * caller interrupted while it waits does not cancel the request for the others.
 */
export const make: Effect.Effect<
  Service,
  never,
  ExchangeConfig.ExchangeConfig | HttpClient.HttpClient | Scope.Scope
> = Effect.gen(
  function*() {
    const config = yield* ExchangeConfig.ExchangeConfig
    const client = refuseRedirects(yield* HttpClient.HttpClient)
    const traceIds = ServiceText.traceIds("the token endpoint")
    const scope = yield* Effect.scope
    const state = yield* SynchronizedRef.make<State>({ cached: Option.none(), inFlight: Option.none() })

    const minInterval = Duration.toMillis(config.minTokenInterval)
    // When the last token request started; only one runs at a time, so a variable serves.
    let lastStartedAt = -Infinity

    const request = Effect.gen(function*() {
      const wait = lastStartedAt + minInterval - (yield* Clock.currentTimeMillis)
      if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
      const startedAt = yield* Clock.currentTimeMillis
      lastStartedAt = startedAt
      const response = yield* fetchToken(config, client, traceIds)
      const lifetime = Math.min(response.expires_in * 1000, maxLifetimeMillis)
      const expiresAt = startedAt + lifetime
      return { token: response.access_token, expiresAt, refreshAt: expiresAt - refreshMargin(lifetime) }
    })

    // Starts one request in the layer's scope; it settles the state before its waiters see it end.
    const start = Effect.forkIn(
      request.pipe(
        Effect.onExit((exit) =>
          SynchronizedRef.update(state, (current) => ({
            cached: Exit.isSuccess(exit) ? Option.some(exit.value) : current.cached,
            inFlight: Option.none()
          }))
        )
      ),
      scope
    )

    // A request interrupted by the closing of the layer's scope fails its waiters instead of leaving them waiting.
    const awaitToken = (fiber: Fiber.Fiber<Cached, Errors.TokenError>) =>
      Effect.flatMap(Fiber.await(fiber), (exit) =>
        Exit.isSuccess(exit)
          ? Effect.succeed(exit.value.token)
          : Cause.hasInterruptsOnly(exit.cause)
          ? Effect.fail(tokenError("the token request was interrupted: the token provider has been shut down"))
          : Effect.failCause(exit.cause))

    const refresh = SynchronizedRef.modifyEffect(state, (current) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const valid = Option.filter(current.cached, (cached) => now < cached.expiresAt)
        if (Option.isSome(valid)) {
          const token = Effect.succeed(valid.value.token)
          if (now < valid.value.refreshAt || Option.isSome(current.inFlight)) return [token, current] as const
          // Refresh ahead: keep serving the valid token while a new one is fetched.
          const fiber = yield* start
          return [token, { cached: valid, inFlight: Option.some(fiber) }] as const
        }
        if (Option.isSome(current.inFlight)) return [awaitToken(current.inFlight.value), current] as const
        const fiber = yield* start
        return [awaitToken(fiber), { cached: Option.none(), inFlight: Option.some(fiber) }] as const
      })).pipe(Effect.flatten)

    // The usual case without the lock: a cached token not yet due for refresh is served as it is.
    const get = Effect.flatMap(SynchronizedRef.get(state), ({ cached }) =>
      Option.isSome(cached)
        ? Effect.clockWith((clock) =>
          clock.currentTimeMillisUnsafe() < cached.value.refreshAt ? Effect.succeed(cached.value.token) : refresh
        )
        : refresh)

    const invalidate = SynchronizedRef.update(state, (current) => ({ ...current, cached: Option.none() }))

    const invalidateToken = (token: Redacted.Redacted<string>) =>
      SynchronizedRef.update(
        state,
        (current) =>
          Option.exists(current.cached, (cached) => Redacted.value(cached.token) === Redacted.value(token))
            ? { ...current, cached: Option.none() }
            : current
      )

    return TokenProvider.of({ get, invalidate, invalidateToken })
  }
)

/** The token provider, built from `ExchangeConfig`; the `HttpClient` is left to the caller. */
export const layer: Layer.Layer<
  TokenProvider,
  never,
  ExchangeConfig.ExchangeConfig | HttpClient.HttpClient
> = Layer.effect(TokenProvider, make)
