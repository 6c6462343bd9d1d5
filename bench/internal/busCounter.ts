/** One subscriber on the poller's bus, draining it as an application would, and counting its events. */
import type { QuoteEvent } from "@gcx/core"
import { QuoteEvents } from "@gcx/poller"
import * as Effect from "effect/Effect"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"

/** Subscribes to the bus of `runtime` for its lifetime; the result reads how many events it has seen. */
export const drain = async <E>(
  runtime: ManagedRuntime.ManagedRuntime<QuoteEvents.QuoteEvents, E>
): Promise<() => number> => {
  let events = 0
  await runtime.runPromise(Effect.gen(function*() {
    const bus = yield* QuoteEvents.QuoteEvents
    yield* Effect.forkDetach(
      Effect.scoped(Effect.flatMap(
        bus.subscribe,
        Stream.runForEach((_: QuoteEvent.QuoteEvent) => Effect.sync(() => events++))
      )),
      { startImmediately: true }
    )
  }))
  return () => events
}
