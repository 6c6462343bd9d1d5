/** The API keys of the gateway's callers. */
export * as ApiKeys from "./ApiKeys.js"
/** The settings of an API key, checked before any I/O. */
export * as KeySettings from "./KeySettings.js"
/** The server of `gcx serve`. */
export * as Gateway from "./Gateway.js"
/** The gateway's HttpApi. */
export * as GatewayApi from "./GatewayApi.js"
/** The gateway's error answers. */
export * as GatewayErrors from "./GatewayErrors.js"
/** The gateway's quotes: ids, ownership, submit, view. */
export * as GatewayQuotes from "./GatewayQuotes.js"
/** A quote as the gateway shows it. */
export * as QuoteView from "./QuoteView.js"
/** Per-caller rate limits. */
export * as RateLimit from "./RateLimit.js"
/** The signature of the gateway's webhooks (`Gcx-Signature`): `sign`, and `verify` for Node receivers. */
export * as WebhookSignature from "./WebhookSignature.js"
/** The webhooks: a durable delivery per terminal outcome and endpoint, started from the quotes' outcomes. */
export * as WebhookDelivery from "./WebhookDelivery.js"
