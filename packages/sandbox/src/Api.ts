/**
 * The one definition of the sandbox's paths and payloads, as an `HttpApi`:
 * the token endpoint, the exchange endpoints of the interface spec and the
 * admin API. The OpenAPI document is generated from it.
 *
 * What the definition cannot say precisely is done around it (see
 * `internal/middleware.ts`): the quote paths are also served under the stage
 * segment, the body limit answers 413, bodies are read by the handlers so that
 * malformed JSON answers 400 with an Error body, and faults act on the socket.
 * A header that does not decode answers 400 with an Error body too (the
 * `SchemaErrors` middleware).
 */
import { Quote, Routes, Token, Transaction, Wire } from "@gcx/core"
import * as Context from "effect/Context"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import {
  BadRequest,
  Forbidden,
  NotFound,
  OAuthBadRequest,
  OAuthUnauthorized,
  PayloadTooLarge,
  ServerError,
  ServiceUnavailable,
  Unauthorized
} from "./ApiErrors.js"
import { FaultRule } from "./Faults.js"
import * as Document from "./internal/document.js"
import { tryItOut } from "./internal/tryItOut.js"
import { Journal } from "./Journal.js"
import { Summary } from "./Lifecycle.js"
import type { Partner } from "./TestData.js"

/** The largest request body accepted, in bytes; larger bodies answer 413. */
export const maxBodyBytes = 16 * 1024

/** The longest `requestId` accepted; it must be made of `A-Z`, `a-z`, `0-9`, `-` and `_`, else 400 `request.invalid.parameter`. */
export const maxRequestIdLength = 128

/** The header that guards the admin API. */
export const adminKeyHeader = "x-admin-key"

/** The prefix of the admin API. */
export const adminPrefix = "/__sandbox"

// Errors: the Error body of spec 2.4, one class per status so that each encodes with its own.

export * from "./ApiErrors.js"

/** The Error bodies every operation of the spec may answer with, besides its own. */
const serviceErrors = [ServerError, ServiceUnavailable] as const

// Auth

/** The form of the token request (spec 4.1); the client may authenticate with a Basic header instead of the secret. */
export const TokenForm = Schema.Struct({
  grant_type: Schema.Literal("client_credentials"),
  client_id: Schema.String,
  client_secret: Schema.optionalKey(Schema.String),
  scope: Schema.optionalKey(Schema.String)
}).pipe(HttpApiSchema.asFormUrlEncoded())

/** The token endpoint. */
export class AuthGroup extends HttpApiGroup.make("auth").add(
  HttpApiEndpoint.post("token", Routes.tokenPath, {
    payload: TokenForm,
    success: Token.TokenResponse,
    error: [OAuthBadRequest, OAuthUnauthorized, PayloadTooLarge, ...serviceErrors]
  }).annotate(OpenApi.Summary, "Get an access token (client credentials, secret in the form or a Basic header)")
) {}

// Exchange

/** Who called an exchange endpoint: the partner of the bearer token, checked against its x-api-key, and the requestId. */
export class Caller extends Context.Service<Caller, {
  readonly partner: Partner
  readonly requestId: string
}>()("@gcx/sandbox/Api/Caller") {}

/**
 * Checks, in order: the bearer token (401), that the partner is enabled
 * (`exchange.partner.not.found`), its x-api-key (`exchange.invalid.x-api-key`)
 * and the requestId header (`request.missing.parameter.requestId`).
 */
export class Authorization extends HttpApiMiddleware.Service<Authorization, {
  provides: Caller
  requires: never
}>()("@gcx/sandbox/Api/Authorization", {
  error: [Unauthorized, BadRequest],
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * Answers a header or path parameter that does not decode with 400 and an
 * Error body (`request.invalid.parameter`, naming the parameter, never its
 * value); without it, the platform treats such a request as a defect.
 */
export class SchemaErrors extends HttpApiMiddleware.Service<SchemaErrors>()("@gcx/sandbox/Api/SchemaErrors", {
  error: BadRequest
}) {}

/** The headers of every exchange call. Header names are case-insensitive; `requestId` arrives as `requestid`. */
export const ExchangeHeaders = Schema.Struct({
  "x-api-key": Schema.String.annotate({ description: "The partner's API key" }),
  requestid: Schema.String.annotate({ description: "requestId: the client's idempotency key" })
})

/** The headers of the POST quote: those of every call plus `previousAttempts`. */
export const QuoteHeaders = Schema.Struct({
  ...ExchangeHeaders.fields,
  previousattempts: Schema.optionalKey(
    Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0)).annotate({
      description: "previousAttempts: how many times this requestId was already tried (0 when absent)"
    })
  )
})

/** The heartbeat's answer (its shape is not in the spec). */
export class Heartbeat extends Schema.Class<Heartbeat>("Heartbeat")({
  status: Schema.Literal("OK"),
  partner: Schema.String,
  responseTimestamp: Wire.Timestamp
}) {}

const quotePath = Routes.quotePath() as `/${string}`

/** The errors of every exchange call, besides an endpoint's own. */
const exchangeErrors = [BadRequest, Unauthorized, ...serviceErrors] as const

/** The exchange endpoints (spec 4.2, 4.3, 4.3b). The quote paths are also served under `/<stage>`. */
export class ExchangeGroup extends HttpApiGroup.make("exchange").add(
  HttpApiEndpoint.get("heartbeat", Routes.heartbeatPath, {
    headers: ExchangeHeaders,
    success: Heartbeat,
    error: exchangeErrors
  }),
  HttpApiEndpoint.post("createQuote", quotePath, {
    headers: QuoteHeaders,
    payload: Quote.QuoteRequest,
    success: Quote.QuoteResponse.pipe(HttpApiSchema.status(201)),
    error: [PayloadTooLarge, ...exchangeErrors]
  }).annotate(OpenApi.Description, "Answers 201 with a Location header; the check itself runs asynchronously."),
  HttpApiEndpoint.get("getTransaction", `${quotePath}/:transactionId`, {
    params: { transactionId: Schema.String },
    headers: ExchangeHeaders,
    success: Transaction.TransactionStatus,
    error: [NotFound, ...exchangeErrors]
  }).annotate(OpenApi.Description, "A failed check answers 400 with its Error body on every GET.")
).middleware(Authorization).middleware(SchemaErrors) {}

// Admin

/** Guards the admin API with the `x-admin-key` header: missing answers 401, wrong 403. */
export class AdminAuthorization
  extends HttpApiMiddleware.Service<AdminAuthorization>()("@gcx/sandbox/Api/AdminAuthorization", {
    error: [Unauthorized, Forbidden],
    security: { adminKey: HttpApiSecurity.apiKey({ in: "header", key: adminKeyHeader }) }
  })
{}

/** The settings the admin API can change while the server runs. */
export const Settings = Schema.Struct({
  tokenLifetimeSeconds: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
}).annotate({ identifier: "Settings" })

/** The dashboard's event streams (`DashboardEvents`), part of the admin API. */
export * from "./DashboardEvents.js"

/** The errors of every admin call, besides an endpoint's own. */
const adminErrors = [BadRequest, NotFound] as const

const clientIdParams = { clientId: Schema.String }

/** The admin API under `/__sandbox`. */
export class AdminGroup extends HttpApiGroup.make("admin").add(
  HttpApiEndpoint.get("journal", "/journal", { success: Journal, error: adminErrors }),
  HttpApiEndpoint.get("transactions", "/transactions", { success: Schema.Array(Summary), error: adminErrors }),
  HttpApiEndpoint.get("faults", "/faults", { success: Schema.Array(FaultRule), error: adminErrors }),
  HttpApiEndpoint.get("events", "/events", {
    success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })),
    error: [ServiceUnavailable, ...adminErrors]
  }).annotate(
    OpenApi.Description,
    "Server-sent events for the dashboard: a `snapshot` event (a DashboardSnapshot as JSON), then, twice a " +
      "second, a `delta` event (a DashboardDelta) when something changed, and a keep-alive delta every 5 s; " +
      "for at most 10 minutes per connection. At most `maxDashboardStreams` (16) streams are open at once: " +
      "beyond, 503 with Retry-After"
  ),
  HttpApiEndpoint.put("setFaults", "/faults", {
    payload: Schema.Array(FaultRule),
    success: Schema.Array(FaultRule),
    error: [PayloadTooLarge, ...adminErrors]
  }),
  HttpApiEndpoint.get("settings", "/settings", { success: Settings, error: adminErrors }),
  HttpApiEndpoint.put("setSettings", "/settings", {
    payload: Settings,
    success: Settings,
    error: [PayloadTooLarge, ...adminErrors]
  }),
  HttpApiEndpoint.post("reset", "/reset", { success: HttpApiSchema.NoContent, error: adminErrors }),
  HttpApiEndpoint.post("disablePartner", "/partners/:clientId/disable", {
    params: clientIdParams,
    success: HttpApiSchema.NoContent,
    error: adminErrors
  }),
  HttpApiEndpoint.post("enablePartner", "/partners/:clientId/enable", {
    params: clientIdParams,
    success: HttpApiSchema.NoContent,
    error: adminErrors
  })
).middleware(AdminAuthorization).prefix(adminPrefix) {}

/** The whole sandbox API. */
export class SandboxApi extends HttpApi.make("sandbox")
  .add(AuthGroup, ExchangeGroup, AdminGroup)
  .annotateMerge(OpenApi.annotations({
    transform: Document.finish(quotePath),
    title: "gcx sandbox",
    version: "3",
    description: "A stateful simulator of the Gift Card Exchange Partner Service. The quote paths are served both " +
      "with and without the stage segment (`/sandbox/v3/exchange/quote`); expectedCompletionTime is in seconds." +
      `\n\n${tryItOut}`
  }))
{}
