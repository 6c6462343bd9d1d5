/**
 * The handlers of `GatewayApi` and its middleware: authentication and rate
 * limit, schema errors, the quotes and the health endpoints.
 */
import * as Redaction from "@gcx/core/Redaction"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import type * as HttpApiError from "effect/http-api/HttpApiError"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ApiKeys } from "../ApiKeys.js"
import * as EventStream from "../EventStream.js"
import { Authorization, Caller, GatewayApi, NotReady, SchemaErrors } from "../GatewayApi.js"
import * as GatewayErrors from "../GatewayErrors.js"
import { GatewayQuotes } from "../GatewayQuotes.js"
import type * as QuoteView from "../QuoteView.js"
import { RateLimit, type RateLimited } from "../RateLimit.js"
import { readCard } from "./body.js"
import * as Conflicts from "./conflicts.js"
import * as Prefer from "./prefer.js"
import { Readiness } from "./readiness.js"
import * as Settled from "./settled.js"

/** The 429 of a spent limit, with its `Retry-After` (set on the answer by a pre-response handler). */
const refused = (limited: RateLimited) => {
  const seconds = Math.max(1, Math.ceil(limited.retryAfterSeconds))
  return HttpEffect.appendPreResponseHandler((_, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(seconds)))
  ).pipe(Effect.andThen(Effect.fail(GatewayErrors.tooManyRequests(seconds))))
}

/**
 * Authenticates the bearer key (401), then takes one request from its rate
 * limit (429 with `Retry-After`).
 */
export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const limits = yield* RateLimit
    return Authorization.of({
      bearer: (httpEffect, { credential }) =>
        keys.authenticate(credential).pipe(
          Effect.mapError(() => GatewayErrors.unauthorized),
          Effect.tap((key) => limits.take(key).pipe(Effect.catchTag("RateLimited", refused))),
          Effect.flatMap((key) => Effect.provideService(httpEffect, Caller, key))
        )
    })
  })
)

/** The 429 of a key that holds as many streams and waits as it may, with its `Retry-After`. */
const refusedHeld = HttpEffect.appendPreResponseHandler((_, response) =>
  Effect.succeed(
    HttpServerResponse.setHeader(response, "retry-after", String(GatewayErrors.heldRetryAfterSeconds))
  )
).pipe(Effect.andThen(Effect.fail(GatewayErrors.tooManyHeld)))

/** A header or path parameter that does not decode: 400 naming it and what was expected, never its value. */
export const SchemaErrorsLive = HttpApiMiddleware.layerSchemaErrorTransform(
  SchemaErrors,
  (error: HttpApiError.HttpApiSchemaError) => {
    if (error.kind === "Body" || error.kind === "ResponseHeaders") return Effect.die(error)
    const described = Redaction.describeParseIssue(error.cause.issue)
    const message = described.startsWith("idempotency-key is missing")
      ? "the Idempotency-Key header is required: 1 to 255 visible ASCII characters"
      : described.startsWith("idempotency-key")
      ? "Idempotency-Key must be 1 to 255 visible ASCII characters"
      : error.kind === "Params"
      ? "invalid path parameter: id must be a quote id as POST answered it (32 lowercase hex characters)"
      : `invalid ${error.kind.toLowerCase()}: ${described}`
    return Effect.fail(GatewayErrors.invalidRequest(message))
  }
)

/** A 202 with its body and `Location`, and the wait granted when one was asked (`Preference-Applied`). */
const accepted = (body: { readonly id: string; readonly links: { readonly self: string } }, waited: number) =>
  HttpServerResponse.jsonUnsafe(body, {
    status: 202,
    headers: waited > 0
      ? { location: body.links.self, "preference-applied": Prefer.applied(waited) }
      : { location: body.links.self }
  })

/**
 * The 200 of a POST whose quote ended within its wait: the quote's view, which is the resource of
 * `Content-Location` (and `Location`, as on a 202).
 */
const ended = (view: QuoteView.QuoteView, waited: number) =>
  HttpServerResponse.jsonUnsafe(view, {
    status: 200,
    headers: {
      location: view.links.self,
      "content-location": view.links.self,
      "preference-applied": Prefer.applied(waited)
    }
  })

/** The quotes endpoints. */
export const QuotesLive = HttpApiBuilder.group(GatewayApi, "quotes", (handlers) =>
  Effect.gen(function*() {
    const quotes = yield* GatewayQuotes
    const conflicts = yield* Conflicts.make
    return handlers
      .handleRaw("submit", ({ headers, request }) =>
        Effect.gen(function*() {
          const caller = yield* Caller
          // The card is read and validated before any I/O: a bad one never reaches the database.
          const card = yield* readCard(request)
          const wait = yield* Effect.fromResult(Prefer.parseWait(headers.prefer)).pipe(
            Effect.mapError(GatewayErrors.invalidRequest)
          )
          const idempotencyKey = headers["idempotency-key"]
          // a quote id whose 409s ran out is refused whatever it sends (see `internal/conflicts.ts`)
          const submitted = yield* conflicts.guarded(
            quotes.requestId(caller.id, idempotencyKey),
            caller.id,
            quotes.submit(caller, idempotencyKey, card),
            (error) => error instanceof GatewayErrors.IdempotencyKeyReused
          ).pipe(Effect.catchTag("RateLimited", refused))
          if (wait === 0) return accepted(submitted, 0)
          // a key that holds as many waits and streams as it may is answered at once, as without the header
          const { view, waited } = yield* Settled.wait(submitted.id, wait, caller.id)
          return Option.isSome(view) ? ended(view.value, wait) : accepted(submitted, waited ? wait : 0)
        }))
      .handle("get", ({ params }) => Effect.flatMap(Caller, (caller) => quotes.view(caller, params.id)))
      .handleRaw("events", ({ headers, params, request }) =>
        Effect.gen(function*() {
          const caller = yield* Caller
          yield* quotes.owned(caller, params.id)
          if (request.method === "HEAD") return EventStream.head
          const lastEventId = yield* Effect.fromResult(EventStream.parseLastEventId(headers["last-event-id"])).pipe(
            Effect.mapError((error) => GatewayErrors.invalidRequest(error.message))
          )
          return yield* EventStream.response(params.id, lastEventId, caller.id).pipe(
            Effect.catchIf((error) => error === GatewayErrors.tooManyHeld, () => refusedHeld)
          )
        }))
  }))

/** The health endpoints. */
export const HealthLive = HttpApiBuilder.group(GatewayApi, "health", (handlers) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" } as const))
      .handle("readyz", () =>
        Effect.flatMap(readiness.check, (state) =>
          state.status === "ready" ? Effect.succeed(state) : Effect.fail(new NotReady(state))))
  }))
