/** @gcx/sandbox: a stateful simulator of the Gift Card Exchange Partner Service, with scenarios and faults. */

/** The HttpApi definition of the sandbox: paths, payloads, errors and the OpenAPI document. */
export * as Api from "./Api.js"

/** Fault rules and the seeded fault injector. */
export * as Faults from "./Faults.js"

/** The request journal. */
export * as Journal from "./Journal.js"

/** HS256 JSON Web Tokens. */
export * as Jwt from "./Jwt.js"

/** The sandbox's metrics: requests by route and status, faults by kind. */
export * as Metrics from "./Metrics.js"

/** The life of a transaction as a function of time. */
export * as Lifecycle from "./Lifecycle.js"

/** The sandbox server: options, service and layer. */
export * as Sandbox from "./Sandbox.js"

/** What each card does. */
export * as Scenarios from "./Scenarios.js"

/** Transactions, idempotency records and partner switches. */
export * as Store from "./Store.js"

/** The fixed test data: partners, product lines, cards, admin key. */
export * as TestData from "./TestData.js"

/** The token issuer. */
export * as Tokens from "./Tokens.js"

/** Captures every log line and span of a run, for secret-hygiene tests. */
export * as Capture from "./Capture.js"
