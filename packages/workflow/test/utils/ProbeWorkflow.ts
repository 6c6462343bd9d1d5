/**
 * A small quote workflow of the deployment tests (the package's `QuoteWorkflow` is the real one):
 * keyed by requestId, a `submit` activity (the POST, with a `previousAttempts` from a durable
 * counter so a replay never repeats one) and an `outcome` activity (the poller's `track` of the
 * persisted transactionId). `Submitted` goes to the runner's bus. The card is derived from the requestId inside the activity, so no card
 * data is in the payload.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Activity from "@effect/workflow/Activity"
import * as Workflow from "@effect/workflow/Workflow"
import { Errors, Quote, QuoteEvent } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents, QuotePoller } from "@gcx/poller"
import { TestData } from "@gcx/sandbox"
import { DateTime, Effect, Layer, Option, Redacted, Schema, Stream } from "effect"
import { createHash } from "node:crypto"

/** The workflow: success the completed quote, error the quote failure. */
export const ProbeQuote = Workflow.make({
  name: "gcx/ProbeQuote",
  payload: { requestId: Schema.String },
  success: Quote.CompletedQuote,
  error: Errors.QuoteFailure,
  idempotencyKey: ({ requestId }) => requestId
})

const Submitted = Schema.Struct({
  transactionId: Schema.String,
  expectedCompletionTime: Schema.optional(Schema.Number),
  completed: Schema.OptionFromNullOr(Quote.CompletedQuote)
})

/** A card number derived from the requestId: distinct cards, derived balances. */
export const cardFor = (requestId: string) => {
  const digits = BigInt("0x" + createHash("sha256").update(requestId).digest("hex").slice(0, 15)).toString()
  return `4929${digits.padStart(12, "0").slice(-12)}`
}

/** The PIN of every probe quote: a sentinel the at-rest scan looks for. */
export const pinSentinel = "pin-SENTINEL-7731"

/** How far the durable counter moves per submit attempt: above the client's retries of one call. */
const attemptStride = 100

const submit = (requestId: string) =>
  Activity.make({
    name: "submit",
    success: Submitted,
    error: Errors.QuoteFailure,
    execute: Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const client = yield* ExchangeClient.ExchangeClient
      const rows = yield* sql<{ n: number }>`
        INSERT INTO gcx_probe_attempts (request_id, n) VALUES (${requestId}, 1)
        ON CONFLICT (request_id) DO UPDATE SET n = gcx_probe_attempts.n + 1
        RETURNING n`.pipe(Effect.orDie)
      const previousAttempts = (rows[0]!.n - 1) * attemptStride
      const created = yield* client.createQuote({
        cardNumber: Redacted.make(cardFor(requestId)),
        pinNumber: Redacted.make(pinSentinel),
        productLineId: TestData.defaultProductLineId
      }, { requestId, previousAttempts })
      const bus = yield* QuoteEvents.QuoteEvents
      yield* bus.publish(
        new QuoteEvent.Submitted({ transactionId: created.transactionId, requestId, timestamp: yield* DateTime.now })
      )
      return {
        transactionId: created.transactionId,
        expectedCompletionTime: created.quote.expectedCompletionTime,
        completed: Quote.toCompleted(created.quote)
      }
    })
  })

const outcome = (transactionId: string, expectedCompletionTime: number | undefined) =>
  Activity.make({
    name: "outcome",
    success: Quote.CompletedQuote,
    error: Errors.QuoteFailure,
    execute: Effect.gen(function*() {
      const poller = yield* QuotePoller.QuotePoller
      const terminal = yield* poller.track(transactionId, { expectedCompletionTime }).pipe(
        Stream.filter(QuoteEvent.isTerminal),
        Stream.runHead,
        Effect.flatten,
        Effect.orDieWith(() => new Error(`no terminal event for ${transactionId}`))
      )
      return terminal._tag === "Completed" ? terminal.quote : yield* Effect.fail(terminal.error)
    })
  })

/** The attempt counter's table. */
export const migrate = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql`CREATE TABLE IF NOT EXISTS gcx_probe_attempts (request_id TEXT PRIMARY KEY, n INTEGER NOT NULL)`
)

/** Registers the workflow (runners only). */
export const layer = ProbeQuote.toLayer(({ requestId }) =>
  Effect.gen(function*() {
    const created = yield* submit(requestId)
    if (Option.isSome(created.completed)) return created.completed.value
    return yield* outcome(created.transactionId, created.expectedCompletionTime)
  })
).pipe(Layer.provide(Layer.effectDiscard(migrate)))
