/**
 * When to poll a quote transaction. A poll schedule is an ordinary
 * `Schedule` whose input is an `Observation` of the latest answer, so that any
 * `Schedule` can replace the default one.
 *
 * The plan stays a `Schedule` rather than a pure function of the observation:
 * it is the poller's extension point (`PollSchedule.fixed`, any user
 * `Schedule`), and the default one is made of `Schedule` combinators. A
 * schedule keeps its state to itself in Effect 4, so the poller steps each
 * transaction's schedule through a closure of its own (`toStep`).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Pull from "effect/Pull"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"

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
  readonly minHint?: Duration.Input
  /** The longest wait for the hint, so that a wild hint cannot stall a quote. Default 30 seconds. */
  readonly maxHint?: Duration.Input
  /** The first backoff delay after the hint. Default 250 millis. */
  readonly initialDelay?: Duration.Input
  /** The backoff growth factor. Default 2. */
  readonly factor?: number
  /** The longest backoff delay. Default 5 seconds. */
  readonly maxDelay?: Duration.Input
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

/** Why `input` is not a duration of at least zero (`name` is the option's), if it is not. */
export const durationProblem = (name: string, input: unknown): string | undefined => {
  const duration = Option.getOrUndefined(Duration.fromInput(input as Duration.Input))
  if (duration === undefined) return `${name} must be a duration (e.g. "30 seconds" or a number of millis)`
  return Duration.isNegative(duration) ? `${name} must not be negative` : undefined
}

/**
 * What is wrong with `options`, if anything: a duration that is not one, or
 * is negative; a `factor` that is not a number above 0; a `jitter` that is not
 * a number (it is clamped to 0..1); an unknown `hintUnit`. Checked before a
 * quote is sent, so that a bad option is an error of the call, not a defect
 * once the quote exists.
 */
export const problem = (options: Options): string | undefined => {
  for (const name of ["minHint", "maxHint", "initialDelay", "maxDelay"] as const) {
    const found = options[name] === undefined ? undefined : durationProblem(`schedule.${name}`, options[name])
    if (found !== undefined) return found
  }
  if (options.factor !== undefined && !(Number.isFinite(options.factor) && options.factor > 0)) {
    return "schedule.factor must be a number above 0"
  }
  if (options.jitter !== undefined && !Number.isFinite(options.jitter)) {
    return "schedule.jitter must be a number (from 0 to 1)"
  }
  if (options.hintUnit !== undefined && options.hintUnit !== "seconds" && options.hintUnit !== "milliseconds") {
    return `schedule.hintUnit must be "seconds" or "milliseconds"`
  }
  return undefined
}

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
    minimum: Duration.fromInputUnsafe(options.minHint ?? defaults.minHint),
    maximum: Duration.fromInputUnsafe(options.maxHint ?? defaults.maxHint)
  })
}

/**
 * Exponential backoff from `initialDelay` by `factor`, capped at `maxDelay`,
 * with each delay randomised down by up to `jitter` so that it never exceeds
 * the cap and clients spread out.
 */
export const backoff = (options: Options = {}): Schedule.Schedule<unknown> => {
  const capped = Schedule.min([
    Schedule.exponential(options.initialDelay ?? defaults.initialDelay, options.factor ?? defaults.factor),
    Schedule.spaced(options.maxDelay ?? defaults.maxDelay)
  ])
  const jitter = Math.min(1, Math.max(0, options.jitter ?? defaults.jitter))
  if (jitter === 0) return capped
  // `Schedule.jittered` spreads delays over 80-120%: a delay here is only ever shortened, within [1 - jitter, 1].
  return capped.pipe(
    Schedule.modifyDelay(({ duration }) =>
      Effect.map(Random.next, (random) => Duration.millis(Duration.toMillis(duration) * (1 - jitter * random)))
    )
  )
}

/**
 * The default schedule: one wait for the service's hint (`expectedCompletionTime`,
 * clamped), then `backoff`. It never ends by itself: the poller's deadline ends
 * a quote that does not complete.
 */
export const make = (options: Options = {}): PollSchedule =>
  Schedule.once.pipe(
    Schedule.setInputType<Observation>(),
    Schedule.addDelay(({ input }) => Effect.succeed(hintDelay(input, options))),
    Schedule.concat(backoff(options))
  )

/** Polls at a fixed interval, whatever the hint: the naive schedule, for comparison. */
export const fixed = (interval: Duration.Input): PollSchedule => Schedule.spaced(interval)

/**
 * One transaction's schedule, stepped by hand: the delay before the next poll
 * after `observation` at `now` (none when the schedule is done). It keeps the
 * schedule's state in its closure, so each transaction needs one of its own.
 */
export type Step = (now: number, observation: Observation) => Effect.Effect<Option.Option<Duration.Duration>>

/**
 * A fresh `Step` of `schedule`. Unlike `Schedule.toStepWithSleep`, it does not
 * sleep: the poller announces the delay (`Retrying`), queues the transaction
 * for its due time and cuts the delay short at the deadline.
 */
export const toStep = (schedule: PollSchedule): Effect.Effect<Step> =>
  Effect.map(Schedule.toStep(schedule), (step): Step => (now, observation) =>
    Pull.matchEffect(step(now, observation), {
      onSuccess: ([, delay]) => Effect.succeed(Option.some(delay)),
      onDone: () => Effect.succeedNone,
      onFailure: Effect.failCause
    }))
