/**
 * How `gcx quote`, `watch` and `batch` poll: the `--poll-interval` and
 * `--deadline` flags. On a terminal the progress bar polls every 200 ms so
 * that it moves smoothly; elsewhere the poller's default schedule waits for
 * the service's hint (`expectedCompletionTime`), then backs off.
 */
import * as PollSchedule from "@gcx/poller/PollSchedule"
import type * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Flag from "effect/cli/Flag"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as GcxFlag from "./Flag.js"
import type * as Render from "./Render.js"

/** The poll interval of the progress bar on a terminal. */
export const barInterval: Duration.Duration = Duration.millis(200)

/** The polling flags. */
export const options = {
  pollInterval: GcxFlag.number("poll-interval", "ms", { integer: true, min: 0, above: true }).pipe(
    Flag.withDescription(
      "poll every N milliseconds (default: 200 on a terminal; elsewhere the service's hint, then backoff)"
    ),
    Flag.optional
  ),
  deadline: GcxFlag.number("deadline", "seconds", { min: 0, above: true }).pipe(
    Flag.withDescription("seconds to poll a quote before giving up with PollTimeout (default 120)"),
    Flag.withDefault(120)
  )
}

/** The parsed polling flags. */
export interface Flags {
  readonly pollInterval: Option.Option<number>
  readonly deadline: number
}

/** The track options for the flags and the display mode. */
export const trackOptions = (flags: Flags, mode: Render.Mode): QuotePoller.TrackOptions => {
  const interval = Option.orElse(
    Option.map(flags.pollInterval, Duration.millis),
    () => mode === "bar" ? Option.some(barInterval) : Option.none()
  )
  return {
    deadline: Duration.seconds(flags.deadline),
    ...Option.match(interval, { onNone: () => ({}), onSome: (every) => ({ schedule: PollSchedule.fixed(every) }) })
  }
}
