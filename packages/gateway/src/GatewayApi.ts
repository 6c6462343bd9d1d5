/**
 * The gateway's API, as an `HttpApi`: its paths and payloads under `/v1`, the
 * health endpoints, and the OpenAPI document generated from it
 * (`/openapi.json`, with a docs page at `/docs`).
 *
 * What the definition cannot say is done around it (`Gateway.ts`): the POST
 * reads its own body (413 past `maxBodyBytes`, malformed JSON 400, the card
 * validated before any I/O), and unknown routes and defects answer with the
 * gateway's error body.
 */
import * as Context from "effect/Context"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import type { ApiKey } from "./ApiKeys.js"
import {
  IdempotencyKeyReused,
  Internal,
  InvalidRequest,
  NotFound,
  PayloadTooLarge,
  TooManyRequests,
  Unauthorized,
  Unavailable,
  UnsupportedMediaType
} from "./GatewayErrors.js"
import * as Prefer from "./internal/prefer.js"
import * as QuoteView from "./QuoteView.js"

/** The largest request body accepted, in bytes; larger bodies answer 413. */
export const maxBodyBytes = 16 * 1024

/** The paths served beside the API's endpoints. */
export const paths = { openApi: "/openapi.json", docs: "/docs" } as const

/** The caller of an endpoint, as its API key authenticated it (`Authorization`). */
export class Caller extends Context.Service<Caller, ApiKey>()("@gcx/gateway/GatewayApi/Caller") {}

/**
 * Authenticates `Authorization: Bearer <key>` (401 with `WWW-Authenticate:
 * Bearer`), then takes one request from the key's rate limit (429 with
 * `Retry-After`); the endpoint runs with its `Caller`.
 */
export class Authorization extends HttpApiMiddleware.Service<Authorization, {
  provides: Caller
  requires: never
}>()("@gcx/gateway/GatewayApi/Authorization", {
  error: [Unauthorized, TooManyRequests],
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * Answers a header or path parameter that does not decode with 400
 * `invalid_request` naming it (never its value); without it, the platform
 * treats such a request as a defect.
 */
export class SchemaErrors extends HttpApiMiddleware.Service<SchemaErrors>()("@gcx/gateway/GatewayApi/SchemaErrors", {
  error: InvalidRequest
}) {}

/** The body of `POST /v1/quotes`: the card to quote. */
export const QuoteRequest = Schema.Struct({
  cardNumber: Schema.String.annotate({ description: "The card number (never echoed, never logged)" }),
  pinNumber: Schema.String.annotate({ description: "The card's PIN (never echoed, never logged)" }),
  productLineId: Schema.String.annotate({ description: "The product line (merchant), e.g. `1000`" })
}).annotate({ identifier: "QuoteRequest" })

/** The answer of `POST /v1/quotes`: the quote's id, its status and its links. */
export const Accepted = Schema.Struct({
  id: Schema.String,
  status: QuoteView.Status,
  links: QuoteView.Links
}).annotate({ identifier: "AcceptedQuote" })

/** The answer of `POST /v1/quotes`. */
export type Accepted = typeof Accepted.Type

/**
 * An `Idempotency-Key`: 1 to 255 visible ASCII characters (its length and
 * pattern reach the OpenAPI document: a pattern does only with the `u` flag).
 */
export const IdempotencyKey = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(255),
  Schema.isPattern(/^[\x21-\x7e]{1,255}$/u, { message: "Idempotency-Key must be 1 to 255 visible ASCII characters" })
)

/** A quote id: the requestId the gateway derived, 32 lowercase hex characters. */
export const QuoteId = Schema.String.check(
  Schema.isPattern(/^[0-9a-f]{32}$/, { message: "a quote id is 32 lowercase hex characters" })
)

/**
 * A `Last-Event-ID`: the sequence number of the last event received, a whole
 * number of at most 15 digits (empty: none), as `EventStream.parseLastEventId` reads it.
 */
export const LastEventId = Schema.String.check(
  Schema.isPattern(/^\s*\d{0,15}\s*$/, {
    message: "Last-Event-ID must be the id of an event received (a whole number)"
  })
)

/** What each error group of a failed quote means for the caller, at HTTP level. */
export const errorGroups = "A failed quote's `error.group` says what to do:\n" +
  "- `card`: the card was refused (invalid, out of range, not accepted, offer expired); show `userMessage` to " +
  "the customer. The same card will be refused again.\n" +
  "- `merchant`: the merchant is unavailable for now; show `userMessage`, try the card later with a new " +
  "Idempotency-Key.\n" +
  "- `request`: the service refused the request: an input it does not know (a `productLineId` not offered " +
  "to this partner: the caller's to fix), or a malformed request (a bug); fix it, do not retry as is.\n" +
  "- `service`: the service failed or kept refusing after gcx's retries (5xx, 429, credentials); retry later " +
  "with a new Idempotency-Key.\n" +
  "- `transport`: the service could not be reached or answered something unreadable after gcx's retries; " +
  "retry later with a new Idempotency-Key.\n" +
  "- `unknown`: the service answered an error gcx does not know; `userMessage` may say more.\n" +
  "- `local`: a fault of the gateway itself (the check ran out of time, the card could not be opened, " +
  "credentials refused); tell its operator.\n" +
  "- `durable`: a failure outside the service's taxonomy (a defect of the durable engine); alert the gateway's " +
  "operator."

/** A quote resource, as `GET /v1/quotes/{id}` answers it. */
const Quote = QuoteView.QuoteView.annotate({ identifier: "Quote" })

/** The `Location` of a quote's answers: its URL. */
const location = Schema.String.annotate({ description: "The quote's URL, `/v1/quotes/{id}` (its `links.self`)" })

/** The `Preference-Applied` of a POST that waited. */
const preferenceApplied = Schema.String.annotate({
  description: "`wait=<seconds>`: the wait granted to a POST sent with `Prefer: wait`"
})

const quoteErrors = [InvalidRequest, Unauthorized, TooManyRequests, Internal, Unavailable] as const

const idParams = { id: QuoteId }

/** The quotes: submit one, read its status, follow its events. Bearer auth. */
export class QuotesGroup extends HttpApiGroup.make("quotes").add(
  HttpApiEndpoint.post("submit", "/v1/quotes", {
    headers: Schema.Struct({
      "idempotency-key": IdempotencyKey.annotate({
        description: "The quote's idempotency key, 1 to 255 visible ASCII characters (your order id): the " +
          "same key with the same card is the same quote"
      }),
      prefer: Schema.optionalKey(Schema.String.annotate({
        description: `\`wait=<seconds>\` (RFC 7240): answer the quote's outcome if it ends within that ` +
          `many seconds (more than ${Prefer.maxWaitSeconds} is granted ${Prefer.maxWaitSeconds}; 0 waits for ` +
          "nothing); the first `wait` counts, other preferences are ignored; a `wait` that is not a whole " +
          "number of seconds is 400"
      }))
    }),
    payload: QuoteRequest,
    success: [
      HttpApiSchema.WithHeaders(Accepted, { location, "preference-applied": Schema.optionalKey(preferenceApplied) })
        .annotate({
          description: "Accepted: the quote is queued, or still running when the wait asked for is over (then with " +
            "`Preference-Applied`); a repeated POST without `Prefer: wait` answers 202 with its current `status`"
        })
        .pipe(HttpApiSchema.status(202)),
      HttpApiSchema.WithHeaders(Quote, {
        location,
        "content-location": location,
        "preference-applied": preferenceApplied
      }).annotate({
        description: "The quote, ended (`completed` or `failed`) within the wait of `Prefer: wait`, as " +
          "`GET /v1/quotes/{id}` shows it"
      })
    ],
    error: [IdempotencyKeyReused, PayloadTooLarge, UnsupportedMediaType, ...quoteErrors]
  }).annotate(
    OpenApi.Description,
    "Queues a quote of the card, durably, and answers 202 with its id and a `Location` header. The same " +
      "Idempotency-Key with the same card answers the same quote (no second check) and its current `status`; " +
      "with another card, 409.\n\nWith `Prefer: wait=<seconds>`, the answer waits for the quote's outcome, up " +
      "to that long: 200 with the quote (as `GET /v1/quotes/{id}` shows it, `completed` or `failed`) when it " +
      "ended in time, else 202 as without it; when a wait was asked, both carry `Preference-Applied: " +
      "wait=<seconds granted>`."
  ),
  HttpApiEndpoint.get("get", "/v1/quotes/:id", {
    params: idParams,
    success: Quote,
    error: [NotFound, ...quoteErrors]
  }).annotate(
    OpenApi.Description,
    `The quote's status, progress and steps; its values once completed, its error once failed.\n\n${errorGroups}`
  ),
  HttpApiEndpoint.get("events", "/v1/quotes/:id/events", {
    params: idParams,
    headers: Schema.Struct({
      "last-event-id": Schema.optionalKey(
        LastEventId.annotate({ description: "Resume after this event id (a dropped stream): no gap, no repeat" })
      )
    }),
    success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })),
    error: [NotFound, ...quoteErrors]
  }).annotate(
    OpenApi.Description,
    "The quote's events as server-sent events (`id: <seq>`, `event: <type>`, `data: <JSON>`, without card " +
      "data), from the first (or after `Last-Event-ID`); the stream ends after the terminal event " +
      "(`Completed` or `Failed`). A `: keep-alive` comment every 15 s."
  )
).middleware(Authorization).middleware(SchemaErrors).annotate(
  OpenApi.Description,
  "Quotes of gift cards, run by gcx's durable engine. Authenticate with `Authorization: Bearer <API key>`."
) {}

/** The readiness checks, each `ok` or `failing`. */
export const Readiness = Schema.Struct({
  status: Schema.Literals(["ready", "not_ready"]),
  database: Schema.Literals(["ok", "failing"]),
  service: Schema.Literals(["ok", "failing"])
}).annotate({ identifier: "Readiness" })

/** The readiness checks. */
export type Readiness = typeof Readiness.Type

/** 503 from `/readyz`: which check fails. */
export class NotReady extends Schema.Error<NotReady>("NotReady")(Readiness.fields, {
  httpApiStatus: 503,
  description: "Not ready: `database` or `service` is `failing`"
}) {}

/** Health endpoints for load balancers and orchestrators (no auth). */
export class HealthGroup extends HttpApiGroup.make("health").add(
  HttpApiEndpoint.get("healthz", "/healthz", {
    success: Schema.Struct({ status: Schema.Literal("ok") })
  }).annotate(OpenApi.Description, "The process is alive."),
  HttpApiEndpoint.get("readyz", "/readyz", {
    success: Readiness,
    error: NotReady
  }).annotate(
    OpenApi.Description,
    "Ready when the database answers a query and the service's heartbeat answered within the last 30 s; " +
      "else 503 naming the check that fails."
  )
) {}

/** The whole gateway API. */
export class GatewayApi extends HttpApi.make("gateway")
  .add(QuotesGroup, HealthGroup)
  .annotateMerge(OpenApi.annotations({
    title: "gcx gateway",
    version: "1",
    description: "gcx serve: the durable quote engine of gcx over HTTP. Submit a card with an Idempotency-Key, " +
      "then poll the quote or follow its events. No answer ever carries the card.\n\n" + errorGroups
  }))
{}
