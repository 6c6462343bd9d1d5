/**
 * When to poll a quote transaction. A poll schedule is an ordinary
 * `Schedule` whose input is an `Observation` of the latest answer, so that any
 * `Schedule` can replace the default one.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"

/** What the poller knows after each answer: it feeds this to the schedule before every wait. */
export interface Observation {
  readonly transactionId: string
  /** How many GETs have been made so far (0 before the first). */
  readonly polls: number
  /** The latest percentComplete, if any. */
  readonly percentComplete: Option.Option<number>
  /** The service's latest `expectedCompletionTime`, raw (its unit is set by `hintUnit`). */
  readonly expectedCompletionTime: Option.Option<number>
}

/** A schedule that decides when the next GET happens. */
export type PollSchedule = Schedule.Schedule<unknown, Observation>

/** Settings of the default poll schedule. */
export interface Options {
  /** The unit of `expectedCompletionTime`. Default `"seconds"` (the sandbox's unit; the live service documents none). */
  readonly hintUnit?: "seconds" | "milliseconds"
  /** The shortest wait for the hint. Default 0. */
  readonly minHint?: Duration.DurationInput
  /** The longest wait for the hint, so that a wild hint cannot stall a quote. Default 30 seconds. */
  readonly maxHint?: Duration.DurationInput
  /** The first backoff delay after the hint. Default 250 millis. */
  readonly initialDelay?: Duration.DurationInput
  /** The backoff growth factor. Default 2. */
  readonly factor?: number
  /** The longest backoff delay. Default 5 seconds. */
  readonly maxDelay?: Duration.DurationInput
  /** The share of each backoff delay that is randomised downwards (0 to 1). Default 0.2; 0 disables jitter. */
  readonly jitter?: number
}

/** The defaults of the default schedule. */
export const defaults = {
  hintUnit: "seconds",
  minHint: Duration.zero,
  maxHint: Duration.seconds(30),
  initialDelay: Duration.millis(250),
  factor: 2,
  maxDelay: Duration.seconds(5),
  jitter: 0.2
} as const

/**
 * The wait the service's hint asks for, clamped to `[minHint, maxHint]`; no
 * hint (or a non-positive one) means no wait beyond `minHint`.
 */
export const hintDelay = (observation: Observation, options: Options = {}): Duration.Duration => {
  const toMillis = (options.hintUnit ?? defaults.hintUnit) === "seconds" ? 1000 : 1
  const requested = Option.match(observation.expectedCompletionTime, {
    onNone: () => Duration.zero,
    onSome: (hint) => (Number.isFinite(hint) && hint > 0 ? Duration.millis(Math.round(hint * toMillis)) : Duration.zero)
  })
  return Duration.clamp(requested, {
    minimum: options.minHint ?? defaults.minHint,
    maximum: options.maxHint ?? defaults.maxHint
  })
}

/**
 * Exponential backoff from `initialDelay` by `factor`, capped at `maxDelay`,
 * with each delay randomised down by up to `jitter` so that it never exceeds
 * the cap and clients spread out.
 */
export const backoff = (options: Options = {}): Schedule.Schedule<unknown> => {
  const capped = Schedule.exponential(options.initialDelay ?? defaults.initialDelay, options.factor ?? defaults.factor)
    .pipe(Schedule.union(Schedule.spaced(options.maxDelay ?? defaults.maxDelay)))
  const jitter = Math.min(1, Math.max(0, options.jitter ?? defaults.jitter))
  return jitter === 0 ? capped : capped.pipe(Schedule.jitteredWith({ min: 1 - jitter, max: 1 }))
}

/**
 * The default schedule: one wait for the service's hint (`expectedCompletionTime`,
 * clamped), then `backoff`. It never ends by itself: the poller's deadline ends
 * a quote that does not complete.
 */
export const make = (options: Options = {}): PollSchedule =>
  Schedule.identity<Observation>().pipe(
    Schedule.addDelay((observation) => hintDelay(observation, options)),
    Schedule.zipLeft(Schedule.once),
    Schedule.andThen(backoff(options))
  )

/** Polls at a fixed interval, whatever the hint: the naive schedule, for comparison. */
export const fixed = (interval: Duration.DurationInput): PollSchedule => Schedule.spaced(interval)

/**
 * Steps a poll schedule by hand: its state after `observation`, and the delay
 * before the next poll (none when the schedule is done). Unlike
 * `Schedule.driver`, it neither sleeps nor keeps the state in a `Ref`: the
 * poller holds each transaction's state as data, announces the delay
 * (`Retrying`) and cuts it short at the deadline.
 */
export const step = (
  schedule: PollSchedule,
  state: unknown,
  now: number,
  observation: Observation
): Effect.Effect<readonly [state: unknown, delay: Option.Option<Duration.Duration>]> =>
  Effect.map(schedule.step(now, observation, state), ([updated, _, decision]) => [
    updated,
    ScheduleDecision.isDone(decision)
      ? Option.none()
      : Option.some(Duration.millis(Math.max(0, ScheduleIntervals.start(decision.intervals) - now)))
  ])
