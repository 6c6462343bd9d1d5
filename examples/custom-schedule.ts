/**
 * custom-schedule: choose when the poller polls.
 *
 *   pnpm example custom-schedule
 *
 * A poll schedule is an ordinary Effect `Schedule` whose input is the poller's latest
 * `Observation` (polls so far, percentComplete, the service's expectedCompletionTime hint).
 * The default waits for the hint once, then backs off exponentially with jitter.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { PollSchedule, QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Console, Duration, Effect, Layer, Option, Schedule, Stream } from "effect"

const GcxLive = QuotePoller.layer().pipe(
  Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(UndiciClient.layer)
)

const schedules: ReadonlyArray<readonly [string, PollSchedule.PollSchedule]> = [
  // The default, tuned: wait at most 250 ms for the hint, then back off gently up to 1 s.
  [
    "tuned default",
    PollSchedule.make({ maxHint: "250 millis", initialDelay: "100 millis", factor: 1.5, maxDelay: "1 second" })
  ],
  // The naive schedule: a fixed interval, whatever the service says.
  ["fixed 100 ms", PollSchedule.fixed("100 millis")],
  // Any Schedule over the observation: poll fast while the quote is young, slower past half-way.
  [
    "adaptive",
    Schedule.identity<PollSchedule.Observation>().pipe(
      Schedule.addDelay(({ input }) =>
        Effect.succeed(
          Option.getOrElse(input.percentComplete, () => 0) < 50 ? Duration.millis(50) : Duration.millis(200)
        )
      )
    )
  ]
]

const program = Effect.gen(function*() {
  const poller = yield* QuotePoller.QuotePoller
  for (const [name, schedule] of schedules) {
    const [elapsed, events] = yield* poller.quote(
      { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" },
      { schedule, deadline: "30 seconds" }
    ).pipe(Stream.runCollect, Effect.timed)
    const progress = events.filter((event) => event._tag === "Progress").length
    yield* Console.log(`${name}: ${progress} progress events, done in ${Math.round(Duration.toMillis(elapsed))} ms`)
  }
})

program.pipe(Effect.provide(GcxLive), NodeRuntime.runMain)
