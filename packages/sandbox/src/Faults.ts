/**
 * Fault injection for reliability tests: rules that pick requests per route
 * (by probability, an exact sequence or the first N) and inject a 503, a 500,
 * added latency, a connection reset, a dropped answer or a malformed body.
 * Randomness comes from a seeded generator, so runs reproduce.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SynchronizedRef from "effect/SynchronizedRef"
import type { Route } from "./Journal.js"

/** The routes a rule can target; `any` is every service route (never the admin API, the docs or unknown paths). */
export const FaultRoute = Schema.Literals(["token", "heartbeat", "createQuote", "getTransaction", "any"])

/** The routes a rule can target. */
export type FaultRoute = typeof FaultRoute.Type

/**
 * What a rule injects:
 * - `status503`: a 503 Error body (ErrorCode `Service Unavailable`), with `Retry-After` when `retryAfterSeconds` is set;
 * - `status500`: a 500 Error body (ErrorCode `Error`);
 * - `reset`: the socket is destroyed before any processing;
 * - `dropAnswer`: the request is processed (a POST creates its transaction), then the socket is destroyed unanswered;
 * - `latency`: `latencyMillis` of delay (fixed, or uniform in `{ min, max }`), then the normal answer;
 * - `malformed`: the request is processed (a POST creates its transaction), then its answer is garbled: it keeps
 *   status and headers, but the body is cut in half;
 * - `stall`: 2 s of delay (real time, not scaled), then the normal answer.
 */
export const FaultKind = Schema.Literals([
  "status503",
  "status500",
  "reset",
  "dropAnswer",
  "latency",
  "malformed",
  "stall"
])

/** What a rule injects. */
export type FaultKind = typeof FaultKind.Type

const Millis = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

/** A delay in milliseconds: fixed, or drawn uniformly from `min` to `max` (inclusive). */
export const Latency = Schema.Union([
  Millis,
  Schema.Struct({ min: Millis, max: Millis }).check(
    Schema.makeFilter((range) => range.min <= range.max || "min must not exceed max")
  )
])

/**
 * One fault rule. Which matching requests it hits: `sequence` when given (one
 * entry per matching request in order, `true` = inject, exhausted = no more),
 * else `times` (the first N), else `probability` (0 to 1, seeded), else every
 * matching request.
 */
export const FaultRule = Schema.Struct({
  route: FaultRoute,
  kind: FaultKind,
  probability: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  sequence: Schema.optionalKey(Schema.Array(Schema.Boolean)),
  times: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  retryAfterSeconds: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  latencyMillis: Schema.optionalKey(Latency)
}).annotate({ identifier: "FaultRule" })

/** One fault rule. */
export type FaultRule = typeof FaultRule.Type

/** How long a `stall` holds the answer, in real milliseconds. */
export const stallMillis = 2_000

/** The kinds that decide the answer, as opposed to only delaying it. */
const answerKinds: ReadonlySet<FaultKind> = new Set(["status503", "status500", "reset", "dropAnswer", "malformed"])

/** What to do with one request. */
export interface Decision {
  /** The delay before anything else, in milliseconds. */
  readonly delayMillis: number
  /** The rule that shapes the answer: the first firing rule of kind status503, status500, reset, dropAnswer or malformed. */
  readonly answer: Option.Option<FaultRule>
  /** Every kind that fired, for the journal. */
  readonly injected: ReadonlyArray<FaultKind>
}

/** A request untouched by faults. */
export const none: Decision = { delayMillis: 0, answer: Option.none(), injected: [] }

const matches = (rule: FaultRule, route: Route): boolean =>
  rule.route === route || (rule.route === "any" && route !== "admin" && route !== "other")

/** The fault injector of one sandbox. */
export class FaultInjector extends Context.Service<FaultInjector, {
  readonly rules: Effect.Effect<ReadonlyArray<FaultRule>>
  /** Replaces the rules, restarts their counters and reseeds the generator. */
  readonly set: (rules: ReadonlyArray<FaultRule>) => Effect.Effect<void>
  /** Decides the faults of the next request on a route, in arrival order. */
  readonly decide: (route: Route) => Effect.Effect<Decision>
}>()("@gcx/sandbox/Faults/FaultInjector") {}

interface State {
  readonly rules: ReadonlyArray<FaultRule>
  readonly seen: ReadonlyArray<number>
  readonly random: Random.Random
}

/** A generator of its own, seeded: the same seed draws the same numbers. */
const seeded = (seed: number | string): Effect.Effect<Random.Random> =>
  Random.withSeed(Effect.service(Random.Random), seed)

const fires = (rule: FaultRule, seen: number, random: Random.Random): boolean => {
  if (rule.sequence !== undefined) return rule.sequence[seen] ?? false
  if (rule.times !== undefined) return seen < rule.times
  const probability = rule.probability
  if (probability !== undefined) return random.nextDoubleUnsafe() < probability
  return true
}

/** A whole number drawn uniformly from `min` to `max` (inclusive). */
const intBetween = (random: Random.Random, min: number, max: number): number => {
  const low = Math.ceil(min)
  return Math.floor(random.nextDoubleUnsafe() * (Math.floor(max) - low + 1)) + low
}

const delayOf = (rule: FaultRule, random: Random.Random): number => {
  if (rule.kind === "stall") return stallMillis
  if (rule.kind !== "latency" || rule.latencyMillis === undefined) return 0
  const latency = rule.latencyMillis
  return typeof latency === "number" ? latency : intBetween(random, latency.min, latency.max)
}

/** Builds a fault injector with its initial rules and seed. */
export const make = (options: {
  readonly seed: number | string
  readonly rules: ReadonlyArray<FaultRule>
}): Effect.Effect<FaultInjector["Service"]> =>
  Effect.gen(function*() {
    const fresh = (rules: ReadonlyArray<FaultRule>): Effect.Effect<State> =>
      Effect.map(seeded(options.seed), (random) => ({ rules, seen: rules.map(() => 0), random }))
    const state = yield* SynchronizedRef.make(yield* fresh(options.rules))
    const decide = (route: Route) =>
      SynchronizedRef.modify(state, (current) => {
        const seen = [...current.seen]
        const injected: Array<FaultKind> = []
        let delayMillis = 0
        let answer = Option.none<FaultRule>()
        for (const [index, rule] of current.rules.entries()) {
          if (!matches(rule, route)) continue
          const fired = fires(rule, seen[index]!, current.random)
          seen[index] = seen[index]! + 1
          if (!fired) continue
          injected.push(rule.kind)
          delayMillis += delayOf(rule, current.random)
          if (Option.isNone(answer) && answerKinds.has(rule.kind)) answer = Option.some(rule)
        }
        const decision: Decision = { delayMillis, answer, injected }
        return [decision, { ...current, seen }] as const
      })
    // Whether rules are set, kept beside the state (both change in one step, under the lock): without rules,
    // requests need not read the state or queue for the lock.
    let active = options.rules.length > 0
    const untouched = Effect.succeed(none)
    return FaultInjector.of({
      rules: Effect.map(SynchronizedRef.get(state), (current) => current.rules),
      set: (rules) =>
        SynchronizedRef.updateEffect(state, () =>
          Effect.map(fresh(rules), (next) => {
            active = rules.length > 0
            return next
          })),
      decide: (route) => active ? decide(route) : untouched
    })
  })

const decodeRule = Schema.decodeUnknownExit(FaultRule)

const parseOption = (rule: Record<string, unknown>, option: string): string | undefined => {
  const [name, value] = option.includes("=") ? option.split("=", 2) as [string, string] : ["p", option]
  switch (name) {
    case "p":
      rule.probability = Number(value)
      return
    case "times":
      rule.times = Number(value)
      return
    case "seq":
      rule.sequence = value.replaceAll(",", "").split("").map((bit) => bit === "1")
      return
    case "retry-after":
      rule.retryAfterSeconds = Number(value)
      return
    case "ms": {
      const [min, max] = value.split("-")
      rule.latencyMillis = max === undefined ? Number(min) : { min: Number(min), max: Number(max) }
      return
    }
    default:
      return `unknown option "${name}"`
  }
}

/**
 * Parses the command-line form of a rule, `route:kind[:option...]`, where an
 * option is `p=0.2` (or a bare `0.2`), `times=3`, `seq=1,0,1`,
 * `retry-after=2`, `ms=250` or `ms=100-300`. Example:
 * `createQuote:status503:0.2:retry-after=1`.
 */
export const parseRule = (text: string): Result.Result<FaultRule, string> => {
  const [route, kind, ...options] = text.split(":")
  const unknown = (what: string, value: string | undefined, known: ReadonlyArray<string>) =>
    Result.fail(
      `--fault ${text}: ${
        value === undefined || value === "" ? `no ${what}` : `unknown ${what} '${value}'`
      } (${what}s: ${known.join(", ")})`
    )
  if (!FaultRoute.literals.includes(route as FaultRoute)) return unknown("route", route, FaultRoute.literals)
  if (!FaultKind.literals.includes(kind as FaultKind)) return unknown("kind", kind, FaultKind.literals)
  const rule: Record<string, unknown> = { route, kind }
  for (const option of options) {
    const problem = parseOption(rule, option)
    if (problem !== undefined) return Result.fail(`--fault ${text}: ${problem}`)
  }
  const exit = decodeRule(rule)
  if (exit._tag === "Success") return Result.succeed(exit.value)
  const error = Cause.findErrorOption(exit.cause)
  return Result.fail(
    `--fault ${text}: ${
      Option.isSome(error) ? optionProblem(formatIssue(error.value.issue)) : "the rule does not decode"
    }`
  )
}

/** The options of the command-line form, by the rule's field they set. */
const optionNames: Readonly<Record<string, string>> = {
  probability: "p",
  times: "times",
  sequence: "seq",
  retryAfterSeconds: "retry-after",
  latencyMillis: "ms"
}

/** A decoding problem in the words of the command line: `p: expected a value between 0 and 1`. */
const optionProblem = (formatted: string): string => {
  const match = /^([^\n]*)\s+at \["(\w+)"\]/.exec(formatted)
  const name = match === null ? undefined : optionNames[match[2]!]
  return name === undefined ? formatted.split("\n")[0]! : `${name}: ${match![1]!.replace(/^Expected/, "expected")}`
}

const formatIssue = SchemaIssue.makeFormatterDefault()
