/**
 * The event bus: every event of every quote this engine runs, for any number
 * of subscribers.
 *
 * Overflow strategy: a sliding PubSub. Publishing never waits; when a
 * subscriber falls `capacity` events behind, the oldest events it has not read
 * are dropped for it. A slow subscriber therefore never slows quoting, and
 * always sees the newest events. Subscribers that must not miss an outcome use
 * the journal (nothing in flight is lost) or consume the quote's own stream.
 */
import type { QuoteEvent } from "@gcx/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/** Settings of the bus. */
export interface Options {
  /** How many unread events a subscriber may fall behind before the oldest are dropped. Default 1,024. */
  readonly capacity?: number
}

/** The event bus service. */
export class QuoteEvents extends Context.Service<QuoteEvents, {
  /** Publishes one event to every subscriber; never waits. */
  readonly publish: (event: QuoteEvent.QuoteEvent) => Effect.Effect<void>
  /**
   * Subscribes now and returns the stream of every event published from now
   * on; the subscription lasts as long as the scope.
   */
  readonly subscribe: Effect.Effect<Stream.Stream<QuoteEvent.QuoteEvent>, never, Scope.Scope>
}>()("@gcx/poller/QuoteEvents") {}

/** Builds a bus on a sliding PubSub of the given capacity. */
export const make = (options: Options = {}): Effect.Effect<QuoteEvents["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const pubsub = yield* Effect.acquireRelease(
      PubSub.sliding<QuoteEvent.QuoteEvent>(options.capacity ?? 1024),
      PubSub.shutdown
    )
    return QuoteEvents.of({
      publish: (event) => Effect.asVoid(PubSub.publish(pubsub, event)),
      subscribe: Effect.map(PubSub.subscribe(pubsub), Stream.fromSubscription)
    })
  })

/** The bus as a layer. */
export const layer = (options?: Options): Layer.Layer<QuoteEvents> => Layer.effect(QuoteEvents, make(options))
