/** Durable gcx quotes on effect/workflow and effect/cluster: SQLite embedded, PostgreSQL across runners. */

/** AES-256-GCM sealing of the card in persisted payloads, with the key of `GCX_DATA_KEY`. */
export * as CardCipher from "./CardCipher.js"

/** The API: submit, result, execute; and the layers of runner and client nodes over a deployment. */
export * as DurableQuotes from "./DurableQuotes.js"

/** The embedded deployment: a single runner over SQLite in a file. */
export * as Embedded from "./Embedded.js"

/** The durable quote workflow and its two activities. */
export * as QuoteWorkflow from "./QuoteWorkflow.js"

/** The requestIds of durable quotes: each belongs to one card (keyed fingerprint), with its workflow and its POST attempts. */
export * as RequestIds from "./RequestIds.js"

/** The service a durable database belongs to: recorded on first use, checked before any quote is resumed. */
export * as ServiceBinding from "./ServiceBinding.js"

/** The PostgreSQL connection of a deployment, and `DatabaseUnreachable`. */
export * as Database from "./Database.js"

/** Terminal outcomes of every runner, over PostgreSQL NOTIFY/LISTEN. */
export * as Outcomes from "./Outcomes.js"

/** The progress events of quotes across nodes (runners to client-only nodes), over the outcomes' channel. */
export * as EventRelay from "./EventRelay.js"

/** The INFO log of the shards a runner acquires and releases. */
export * as ShardLog from "./ShardLog.js"

/** The PostgreSQL deployments: cluster runners and client-only nodes, and their sharding settings. */
export * as Runner from "./Runner.js"

/** How the cluster's nodes authenticate each other (mutual TLS) and the bounds of their connections. */
export * as ClusterSecurity from "./ClusterSecurity.js"

/** The events of durable quotes, kept in order in the database. */
export * as EventLog from "./EventLog.js"
