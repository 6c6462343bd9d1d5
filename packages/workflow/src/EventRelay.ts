/**
 * The events of quotes across nodes: a runner relays the progress of the quotes it runs (`Submitted`,
 * `Progress`, `StepCompleted`, `Retrying`) on the channel of the outcomes (`Outcomes.channel`, PostgreSQL
 * `NOTIFY`), and a client-only node publishes what it hears (`LISTEN`) on its own `QuoteEvents` bus, so
 * that it shows a quote as the runner sees it. The outcome itself stays with `DurableQuotes.result`.
 *
 * No card data crosses: `Submitted` goes without its masked card (the submitting node knows its card),
 * and the terminal events, which carry the card's values, are not relayed. Events are sent in batches
 * (one `NOTIFY` per 50 ms at most, each under PostgreSQL's 8,000-byte payload limit), so a busy runner
 * adds a few statements a second, not one per event. Best effort: a listener that was not connected,
 * or a batch that could not be sent, costs a display line, never a quote.
 */
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import type * as SqlError from "effect/sql/SqlError"
import * as Stream from "effect/Stream"
import * as PgClient from "./internal/pg/PgClient.js"
import * as StoreOutage from "./internal/storeOutage.js"
import * as Outcomes from "./Outcomes.js"

/** A batch of events as announced on `Outcomes.channel`. */
export class Events extends Schema.TaggedClass<Events>()("Events", {
  events: Schema.Array(QuoteEvent.QuoteEvent)
}) {}

const decodeEvents = Schema.decodeUnknownResult(Schema.fromJsonString(Events))

/** PostgreSQL refuses a payload of 8,000 bytes or more: the batches stay under this. */
export const maxPayloadBytes = 7_500

/** An event as relayed: without card data; `undefined` for the events that are not relayed (terminal ones). */
export const relayed = (event: QuoteEvent.QuoteEvent): QuoteEvent.QuoteEvent | undefined => {
  if (QuoteEvent.isTerminal(event)) return undefined
  if (event._tag !== "Submitted" || event.card === undefined) return event
  const { _tag: _, card: __, ...fields } = event
  return new QuoteEvent.Submitted(fields, { disableChecks: true })
}

/** The payloads of a batch of events: each under `maxPayloadBytes` (an event too large alone is dropped). */
export const payloads = (events: Iterable<QuoteEvent.QuoteEvent>): Array<string> => {
  const head = `{"_tag":"Events","events":[`
  const out: Array<string> = []
  let parts: Array<string> = []
  let size = head.length + 2
  for (const event of events) {
    const part = JSON.stringify(QuoteEvent.encode(event))
    const bytes = Buffer.byteLength(part)
    if (head.length + 2 + bytes > maxPayloadBytes) continue
    if (size + bytes + 1 > maxPayloadBytes) {
      out.push(`${head}${parts.join(",")}]}`)
      parts = []
      size = head.length + 2
    }
    parts.push(part)
    size += bytes + 1
  }
  if (parts.length > 0) out.push(`${head}${parts.join(",")}]}`)
  return out
}

/**
 * On a runner: relays the events of its `QuoteEvents` bus (see the module notes) on `Outcomes.channel`,
 * from the layer's build until its scope closes.
 */
export const layerPublisher: Layer.Layer<never, never, QuoteEvents.QuoteEvents | PgClient.PgClient> = Layer
  .effectDiscard(
    Effect.gen(function*() {
      const pg = yield* PgClient.PgClient
      const events = yield* Effect.flatMap(QuoteEvents.QuoteEvents, (bus) => bus.subscribe)
      yield* events.pipe(
        Stream.filterMap((event) => {
          const out = relayed(event)
          return out === undefined ? Result.fail(event) : Result.succeed(out)
        }),
        Stream.groupedWithin(256, "50 millis"),
        Stream.runForEach((batch) =>
          Effect.forEach(payloads(batch), (payload) => pg.notify(Outcomes.channel, payload), { discard: true }).pipe(
            Effect.timeout("5 seconds"),
            Effect.catchCause((cause) => Effect.logDebug("could not relay quote events", cause))
          )
        ),
        Effect.forkScoped
      )
    })
  )

/**
 * On a client-only node: listens on `Outcomes.channel` (confirmed by PostgreSQL before the layer is
 * built, so a quote submitted afterwards is heard from its first event) and publishes the events the
 * runners relay on this node's `QuoteEvents` bus. A lost connection does not end the relay: it
 * listens again (100 ms, backing off to 2 s) until the database is back, with a warning for each loss
 * (a failed attempt is logged at debug level). The events relayed meanwhile are not heard (the
 * outcomes are read from the database, `DurableQuotes.result`).
 */
export const layerSubscriber: Layer.Layer<
  never,
  SqlError.SqlError,
  QuoteEvents.QuoteEvents | PgClient.PgClient
> = Layer.effectDiscard(
  Effect.gen(function*() {
    const bus = yield* QuoteEvents.QuoteEvents
    const pg = yield* PgClient.PgClient
    const relay = (notifications: Queue.Dequeue<{ readonly payload: string }, SqlError.SqlError>) =>
      Stream.fromQueue(notifications).pipe(
        Stream.filterMap((notification) => decodeEvents(notification.payload)),
        Stream.runForEach((batch) => Effect.forEach(batch.events, bus.publish, { discard: true }))
      )
    // the first listen is confirmed before the layer is built, in a scope of its own: its connection
    // goes back to the pool once lost
    const firstScope = yield* Scope.fork(yield* Scope.Scope)
    const first = yield* Scope.provide(pg.listen(Outcomes.channel), firstScope)
    // whether a listen is under way: its loss is warned of (once per loss), a failed attempt is debug
    let listening = true
    const lost = (cause: Cause.Cause<unknown>) => {
      const reason = String((Cause.squash(cause) as { readonly message?: unknown }).message ?? "")
      const line = listening
        ? Effect.logWarning("lost the runners' quote events: listening again until the database is back")
        : Effect.logDebug("the runners' quote events: listening again failed")
      listening = false
      return line.pipe(Effect.annotateLogs({ reason }))
    }
    const listened = (notifications: Queue.Dequeue<{ readonly payload: string }, SqlError.SqlError>) => {
      listening = true
      return relay(notifications)
    }
    // after a lost connection: listen again, relay until it is lost again, for the life of the node
    const again = Effect.scoped(Effect.flatMap(pg.listen(Outcomes.channel), listened)).pipe(
      Effect.catchCause((cause) => Effect.andThen(lost(cause), Effect.fail("lost" as const))),
      Effect.andThen(Effect.fail("ended" as const)),
      // the pauses of a store that is out (100 ms, doubling to 2 s)
      Effect.retry({ schedule: StoreOutage.pauses })
    )
    yield* relay(first).pipe(
      Effect.ensuring(Scope.close(firstScope, Exit.void)),
      Effect.catchCause(lost),
      Effect.andThen(Effect.ignore(again)),
      Effect.forkScoped
    )
  })
)
