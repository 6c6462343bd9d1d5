/**
 * The OAuth 2.0 token endpoint's answers: the token response of spec 2.5 and
 * the RFC 6749 error body.
 */
import * as Schema from "effect/Schema"
import { optional, WireNumber } from "./Wire.js"

/** A successful token response (spec 2.5). The access token is `Redacted` in memory. */
export class TokenResponse extends Schema.Class<TokenResponse>("@gcx/core/TokenResponse")({
  access_token: Schema.RedactedFromValue(Schema.String),
  expires_in: WireNumber,
  token_type: Schema.String
}) {}

/** An RFC 6749 error body (`{ error, error_description }`). */
export class OAuthErrorBody extends Schema.Class<OAuthErrorBody>("@gcx/core/OAuthErrorBody")({
  error: Schema.String,
  error_description: optional(Schema.String)
}) {}
