/**
 * The durable quote's definition: its name, what the engine persists of it
 * (the payload), how it can fail, and the `Workflow` (run under the execution id recorded for its requestId).
 */
import * as Errors from "@gcx/core/Errors"
import * as Ids from "@gcx/core/Ids"
import * as Quote from "@gcx/core/Quote"
import * as Schema from "effect/Schema"
import * as Workflow from "effect/workflow/Workflow"
import * as CardCipher from "../../CardCipher.js"

/**
 * Every way a durable quote can fail: the core `QuoteFailure`, which holds a
 * card that could not be opened (`CardDecryptionError`) with the local errors.
 */
export const DurableQuoteFailure = Errors.QuoteFailure

/** Every way a durable quote can fail. */
export type DurableQuoteFailure = typeof DurableQuoteFailure.Type

/** What the engine persists of a quote: its requestId and its sealed card. */
export const Payload = Schema.Struct({
  requestId: Ids.StoredRequestId,
  card: CardCipher.SealedCard
})

/** What the engine persists of a quote. */
export type Payload = typeof Payload.Type

/** The name of the workflow, and the prefix of its activities. */
export const name = "GcxQuote"

/**
 * The durable quote. gcx runs it under the execution id recorded for its
 * requestId (`RequestIds`), not under one derived from `idempotencyKey`: a
 * run under a derived id (`QuoteWorkflow.execute` of effect/workflow) is not
 * the quote's, and its submit fails with `RequestIdConflict`.
 */
export const QuoteWorkflow = Workflow.make(name, {
  payload: Payload,
  success: Quote.CompletedQuote,
  error: DurableQuoteFailure,
  idempotencyKey: ({ requestId }) => requestId
})
