/**
 * The Error bodies the sandbox's API answers with: the Error body of spec 2.4
 * and the RFC 6749 error body of the token endpoint, one class per status so
 * that each encodes with its own. `Api` re-exports them.
 */
import { ErrorBody, Token } from "@gcx/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"

/**
 * A `_tag` that exists in memory only: it tells the error classes apart (for
 * `catchTag`), but it is never written to the wire, where the body keeps the
 * spec's fields. (Each class also encodes with its own status: the platform
 * tells them apart by class.)
 */
const memoryTag = <Tag extends string>(tag: Tag) =>
  Schema.Literal(tag).pipe(
    Schema.encodeTo(Schema.optionalKey(Schema.Never), {
      decode: SchemaGetter.withDefault(Effect.succeed(tag)),
      encode: SchemaGetter.omit()
    }),
    Schema.withConstructorDefault(Effect.succeed(tag))
  )

/** 400 with an Error body. */
export class BadRequest extends ErrorBody.ErrorBody.extend<BadRequest>("BadRequest")(
  { _tag: memoryTag("BadRequest") },
  { httpApiStatus: 400, description: "Bad request (an Error body)" }
) {}

/** 401 with an Error body: the bearer token is missing, forged or expired (or the admin key is missing). */
export class Unauthorized extends ErrorBody.ErrorBody.extend<Unauthorized>("Unauthorized")(
  { _tag: memoryTag("Unauthorized") },
  { httpApiStatus: 401 }
) {}

/** 403 with an Error body: the admin key is wrong. */
export class Forbidden extends ErrorBody.ErrorBody.extend<Forbidden>("Forbidden")(
  { _tag: memoryTag("Forbidden") },
  { httpApiStatus: 403 }
) {}

/** 404 with an Error body. */
export class NotFound extends ErrorBody.ErrorBody.extend<NotFound>("NotFound")(
  { _tag: memoryTag("NotFound") },
  { httpApiStatus: 404 }
) {}

/** 413 with an Error body: the body is larger than `maxBodyBytes`. */
export class PayloadTooLarge extends ErrorBody.ErrorBody.extend<PayloadTooLarge>("PayloadTooLarge")(
  { _tag: memoryTag("PayloadTooLarge") },
  { httpApiStatus: 413 }
) {}

/** 500 with an Error body (`ErrorCode: "Error"`): a defect, or an injected `status500` fault. */
export class ServerError extends ErrorBody.ErrorBody.extend<ServerError>("ServerError")(
  { _tag: memoryTag("ServerError") },
  { httpApiStatus: 500, description: "Internal error (or an injected status500 fault)" }
) {}

/** 503 with an Error body (`ErrorCode: "Service Unavailable"`), maybe with `Retry-After`: an injected `status503` fault. */
export class ServiceUnavailable extends ErrorBody.ErrorBody.extend<ServiceUnavailable>("ServiceUnavailable")(
  { _tag: memoryTag("ServiceUnavailable") },
  {
    httpApiStatus: 503,
    description:
      "Service unavailable (an injected status503 fault, or too many dashboard streams); may carry Retry-After"
  }
) {}

/** 400 with an RFC 6749 error body. */
export class OAuthBadRequest extends Token.OAuthErrorBody.extend<OAuthBadRequest>("OAuthBadRequest")(
  { _tag: memoryTag("OAuthBadRequest") },
  { httpApiStatus: 400 }
) {}

/** 401 with an RFC 6749 error body (`invalid_client`). */
export class OAuthUnauthorized extends Token.OAuthErrorBody.extend<OAuthUnauthorized>("OAuthUnauthorized")(
  { _tag: memoryTag("OAuthUnauthorized") },
  { httpApiStatus: 401 }
) {}
