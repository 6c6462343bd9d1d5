/**
 * The one definition of the sandbox's paths and payloads, as an `HttpApi`:
 * the token endpoint, the exchange endpoints of the interface spec and the
 * admin API. The OpenAPI document is generated from it.
 *
 * What the definition cannot say precisely is done around it (see
 * `internal/middleware.ts`): the quote paths are also served under the stage
 * segment, the body limit answers 413, bodies are read by the handlers so that
 * malformed JSON answers 400 with an Error body, and faults act on the socket.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { ErrorBody, Quote, Routes, Token, Transaction, Wire } from "@gcx/core"
import * as Context from "effect/Context"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { FaultRule } from "./Faults.js"
import * as Document from "./internal/document.js"
import { Entry, Journal, RequestCounts } from "./Journal.js"
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

/**
 * A `_tag` that exists in memory only: it tells the error classes apart (so
 * that each encodes with its own status, and `catchTag` works), but it is
 * never written to the wire, where the body keeps the spec's fields.
 */
const memoryTag = <Tag extends string>(tag: Tag) =>
  Schema.optionalToRequired(Schema.Never, Schema.Literal(tag), {
    decode: () => tag,
    encode: () => Option.none()
  }).pipe(Schema.withConstructorDefault(() => tag))

/** 400 with an Error body. */
export class BadRequest extends ErrorBody.ErrorBody.extend<BadRequest>("BadRequest")(
  { _tag: memoryTag("BadRequest") },
  HttpApiSchema.annotations({ status: 400 })
) {}

/** 401 with an Error body: the bearer token is missing, forged or expired (or the admin key is missing). */
export class Unauthorized extends ErrorBody.ErrorBody.extend<Unauthorized>("Unauthorized")(
  { _tag: memoryTag("Unauthorized") },
  HttpApiSchema.annotations({ status: 401 })
) {}

/** 403 with an Error body: the admin key is wrong. */
export class Forbidden extends ErrorBody.ErrorBody.extend<Forbidden>("Forbidden")(
  { _tag: memoryTag("Forbidden") },
  HttpApiSchema.annotations({ status: 403 })
) {}

/** 404 with an Error body. */
export class NotFound extends ErrorBody.ErrorBody.extend<NotFound>("NotFound")(
  { _tag: memoryTag("NotFound") },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** 413 with an Error body: the body is larger than `maxBodyBytes`. */
export class PayloadTooLarge extends ErrorBody.ErrorBody.extend<PayloadTooLarge>("PayloadTooLarge")(
  { _tag: memoryTag("PayloadTooLarge") },
  HttpApiSchema.annotations({ status: 413 })
) {}

/** 500 with an Error body (`ErrorCode: "Error"`): a defect, or an injected `status500` fault. */
export class ServerError extends ErrorBody.ErrorBody.extend<ServerError>("ServerError")(
  { _tag: memoryTag("ServerError") },
  HttpApiSchema.annotations({ status: 500, description: "Internal error (or an injected status500 fault)" })
) {}

/** 503 with an Error body (`ErrorCode: "Service Unavailable"`), maybe with `Retry-After`: an injected `status503` fault. */
export class ServiceUnavailable extends ErrorBody.ErrorBody.extend<ServiceUnavailable>("ServiceUnavailable")(
  { _tag: memoryTag("ServiceUnavailable") },
  HttpApiSchema.annotations({
    status: 503,
    description:
      "Service unavailable (an injected status503 fault, or too many dashboard streams); may carry Retry-After"
  })
) {}

/** 400 with an RFC 6749 error body. */
export class OAuthBadRequest extends Token.OAuthErrorBody.extend<OAuthBadRequest>("OAuthBadRequest")(
  { _tag: memoryTag("OAuthBadRequest") },
  HttpApiSchema.annotations({ status: 400 })
) {}

/** 401 with an RFC 6749 error body (`invalid_client`). */
export class OAuthUnauthorized extends Token.OAuthErrorBody.extend<OAuthUnauthorized>("OAuthUnauthorized")(
  { _tag: memoryTag("OAuthUnauthorized") },
  HttpApiSchema.annotations({ status: 401 })
) {}

// Auth

/** The form of the token request (spec 4.1); the client may authenticate with a Basic header instead of the secret. */
export const TokenForm = Schema.Struct({
  grant_type: Schema.Literal("client_credentials"),
  client_id: Schema.String,
  client_secret: Schema.optional(Schema.String),
  scope: Schema.optional(Schema.String)
}).pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" }))

/** The token endpoint. */
export class AuthGroup extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("token", Routes.tokenPath)
      .setPayload(TokenForm)
      .addSuccess(Token.TokenResponse)
      .addError(OAuthBadRequest)
      .addError(OAuthUnauthorized)
      .addError(PayloadTooLarge)
      .addError(ServerError)
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "Get an access token (client credentials, secret in the form or a Basic header)")
  )
{}

// Exchange

/** Who called an exchange endpoint: the partner of the bearer token, checked against its x-api-key, and the requestId. */
export class Caller extends Context.Tag("@gcx/sandbox/Api/Caller")<Caller, {
  readonly partner: Partner
  readonly requestId: string
}>() {}

/**
 * Checks, in order: the bearer token (401), that the partner is enabled
 * (`exchange.partner.not.found`), its x-api-key (`exchange.invalid.x-api-key`)
 * and the requestId header (`request.missing.parameter.requestId`).
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("@gcx/sandbox/Api/Authorization", {
  failure: Schema.Union(Unauthorized, BadRequest),
  provides: Caller,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/** The headers of every exchange call. Header names are case-insensitive; `requestId` arrives as `requestid`. */
export const ExchangeHeaders = Schema.Struct({
  "x-api-key": Schema.String.annotations({ description: "The partner's API key" }),
  requestid: Schema.String.annotations({ description: "requestId: the client's idempotency key" })
})

/** The headers of the POST quote: those of every call plus `previousAttempts`. */
export const QuoteHeaders = Schema.Struct({
  ...ExchangeHeaders.fields,
  previousattempts: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()).annotations({
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

const TransactionIdParam = Schema.Struct({ transactionId: Schema.String })

const quotePath = Routes.quotePath() as HttpApiEndpoint.PathSegment

/** The exchange endpoints (spec 4.2, 4.3, 4.3b). The quote paths are also served under `/<stage>`. */
export class ExchangeGroup extends HttpApiGroup.make("exchange")
  .add(
    HttpApiEndpoint.get("heartbeat", Routes.heartbeatPath)
      .setHeaders(ExchangeHeaders)
      .addSuccess(Heartbeat)
  )
  .add(
    HttpApiEndpoint.post("createQuote", quotePath)
      .setHeaders(QuoteHeaders)
      .setPayload(Quote.QuoteRequest)
      .addSuccess(Quote.QuoteResponse, { status: 201 })
      .addError(PayloadTooLarge)
      .annotate(OpenApi.Description, "Answers 201 with a Location header; the check itself runs asynchronously.")
  )
  .add(
    HttpApiEndpoint.get("getTransaction", `${quotePath}/:transactionId`)
      .setPath(TransactionIdParam)
      .setHeaders(ExchangeHeaders)
      .addSuccess(Transaction.TransactionStatus)
      .addError(NotFound)
      .annotate(OpenApi.Description, "A failed check answers 400 with its Error body on every GET.")
  )
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(ServerError)
  .addError(ServiceUnavailable)
  .middleware(Authorization)
{}

// Admin

/** Guards the admin API with the `x-admin-key` header: missing answers 401, wrong 403. */
export class AdminAuthorization
  extends HttpApiMiddleware.Tag<AdminAuthorization>()("@gcx/sandbox/Api/AdminAuthorization", {
    failure: Schema.Union(Unauthorized, Forbidden),
    security: { adminKey: HttpApiSecurity.apiKey({ in: "header", key: adminKeyHeader }) }
  })
{}

/** The settings the admin API can change while the server runs. */
export const Settings = Schema.Struct({
  tokenLifetimeSeconds: Schema.Int.pipe(Schema.nonNegative())
}).annotations({ identifier: "Settings" })

const ClientIdParam = Schema.Struct({ clientId: Schema.String })

/** A transaction as the dashboard shows it: its summary and its steps. */
export const DashboardTransaction = Schema.Struct({
  ...Summary.fields,
  steps: Schema.Array(Transaction.Step)
}).annotations({ identifier: "DashboardTransaction" })

/** A partner as the dashboard shows it. */
export const DashboardPartner = Schema.Struct({ clientId: Schema.String, enabled: Schema.Boolean })

/** The first message of the dashboard's event stream: the latest transactions and requests, newest first. */
export const DashboardSnapshot = Schema.Struct({
  time: Wire.Timestamp,
  requests: RequestCounts,
  transactions: Schema.Array(DashboardTransaction),
  journal: Schema.Array(Entry),
  faults: Schema.Array(FaultRule),
  partners: Schema.Array(DashboardPartner)
}).annotations({ identifier: "DashboardSnapshot" })

/**
 * A later message of the dashboard's event stream: what changed since the
 * stream's previous message. A part that did not change is absent; a delta
 * with the time only is a keep-alive.
 */
export const DashboardDelta = Schema.Struct({
  time: Wire.Timestamp,
  requests: Schema.optional(RequestCounts),
  /** The transactions among the latest that are new to the stream or changed (state, progress, steps). */
  transactions: Schema.optional(Schema.Array(DashboardTransaction)),
  /** The ids of the latest transactions, newest first, when they are not those of the previous message. */
  transactionIds: Schema.optional(Schema.Array(Schema.String)),
  /** The requests journaled since the previous message, newest first. */
  journal: Schema.optional(Schema.Array(Entry)),
  faults: Schema.optional(Schema.Array(FaultRule)),
  partners: Schema.optional(Schema.Array(DashboardPartner))
}).annotations({ identifier: "DashboardDelta" })

/** The admin API under `/__sandbox`. */
export class AdminGroup extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.get("journal", "/journal").addSuccess(Journal))
  .add(HttpApiEndpoint.get("transactions", "/transactions").addSuccess(Schema.Array(Summary)))
  .add(HttpApiEndpoint.get("faults", "/faults").addSuccess(Schema.Array(FaultRule)))
  .add(
    HttpApiEndpoint.get("events", "/events")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/event-stream" }))
      .addError(ServiceUnavailable)
      .annotate(
        OpenApi.Description,
        "Server-sent events for the dashboard: a `snapshot` event (a DashboardSnapshot as JSON), then, twice a " +
          "second, a `delta` event (a DashboardDelta) when something changed, and a keep-alive delta every 5 s; " +
          "for at most 10 minutes per connection. At most `maxDashboardStreams` (16) streams are open at once: " +
          "beyond, 503 with Retry-After"
      )
  )
  .add(
    HttpApiEndpoint.put("setFaults", "/faults")
      .setPayload(Schema.Array(FaultRule))
      .addSuccess(Schema.Array(FaultRule))
      .addError(PayloadTooLarge)
  )
  .add(HttpApiEndpoint.get("settings", "/settings").addSuccess(Settings))
  .add(
    HttpApiEndpoint.put("setSettings", "/settings")
      .setPayload(Settings)
      .addSuccess(Settings)
      .addError(PayloadTooLarge)
  )
  .add(HttpApiEndpoint.post("reset", "/reset").addSuccess(HttpApiSchema.NoContent))
  .add(
    HttpApiEndpoint.post("disablePartner", "/partners/:clientId/disable")
      .setPath(ClientIdParam)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    HttpApiEndpoint.post("enablePartner", "/partners/:clientId/enable")
      .setPath(ClientIdParam)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .addError(BadRequest)
  .addError(NotFound)
  .middleware(AdminAuthorization)
  .prefix(adminPrefix)
{}

/** The whole sandbox API. */
export class SandboxApi extends HttpApi.make("sandbox")
  .add(AuthGroup)
  .add(ExchangeGroup)
  .add(AdminGroup)
  .annotateContext(OpenApi.annotations({
    transform: Document.finish(quotePath),
    title: "gcx sandbox",
    version: "3",
    description: "A stateful simulator of the Gift Card Exchange Partner Service. The quote paths are served both " +
      "with and without the stage segment (`/sandbox/v3/exchange/quote`); expectedCompletionTime is in seconds."
  }))
{}
