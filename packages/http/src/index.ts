/** Configuration, token provider and exchange client of gcx, as Effect services. */

/** The configuration: environment, addresses, credentials, timeouts, retries. */
export * as ExchangeConfig from "./ExchangeConfig.js"

/** The heartbeat, POST quote and GET transaction calls. */
export * as ExchangeClient from "./ExchangeClient.js"

/** The client-wide token bucket of retries. */
export * as RetryBudget from "./RetryBudget.js"

/** What is retried and how retries are paced. */
export * as RetryPolicy from "./RetryPolicy.js"

/** Bearer tokens: cached, refreshed ahead of expiry, one request in flight. */
export * as TokenProvider from "./TokenProvider.js"

/** The client's metrics (Effect `Metric`s); export them with `@gcx/http/Telemetry`. */
export * as Metrics from "./Metrics.js"

/** Redirects, never followed by gcx: `refuseRedirects` for a client, `isRedirect` for a status. */
export * as Redirects from "./Redirects.js"
