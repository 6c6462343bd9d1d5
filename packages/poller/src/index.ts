/** Schedule-driven polling, the quote event stream, the event bus and the journal of gcx. */

/** When to poll: the default hint-then-backoff schedule and its pieces. */
export * as PollSchedule from "./PollSchedule.js"

/** The event bus: every event of every quote, for any number of subscribers. */
export * as QuoteEvents from "./QuoteEvents.js"

/** The durable record of transactions in flight. */
export * as QuoteJournal from "./QuoteJournal.js"

/** Submits quotes and polls them as a typed stream of events. */
export * as QuotePoller from "./QuotePoller.js"

/** The poller's metrics (Effect `Metric`s): quotes submitted, outcomes, duration, in flight, polls. */
export * as Metrics from "./Metrics.js"

/** A keyed fingerprint of cards (HMAC-SHA-256): a requestId belongs to one card. */
export * as CardFingerprint from "./CardFingerprint.js"
