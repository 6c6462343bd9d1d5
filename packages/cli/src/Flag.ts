/**
 * Flags whose errors name the flag: `--deadline must be a number above 0,
 * got 'abc'`, `--env must be one of sandbox, production, custom, got 'x'`,
 * instead of @effect/cli's `'abc' is not a float`, or a schema tree, that
 * name nothing.
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Effect from "effect/Effect"
import * as Text from "./Text.js"

/** What a numeric flag accepts. */
export interface Range {
  /** Whole numbers only. */
  readonly integer?: boolean
  /** The smallest value accepted (inclusive), or, with `above`, the bound it must exceed. */
  readonly min?: number
  readonly above?: boolean
  /** The largest value accepted (inclusive). */
  readonly max?: number
}

/** What a flag's value must be, in words: `a whole number from 0 to 65535`. */
export const expected = (range: Range): string => {
  const kind = range.integer === true ? "a whole number" : "a number"
  if (range.min !== undefined && range.max !== undefined) return `${kind} from ${range.min} to ${range.max}`
  if (range.min !== undefined) return `${kind} ${range.above === true ? "above" : "of at least"} ${range.min}`
  if (range.max !== undefined) return `${kind} of at most ${range.max}`
  return kind
}

/** Reads a flag's text as a number in `range`, or says what is wrong, naming the flag. */
export const parse = (name: string, range: Range) => (text: string): Effect.Effect<number, string> => {
  const value = text.trim() === "" ? Number.NaN : Number(text)
  const ok = Number.isFinite(value) &&
    (range.integer !== true || Number.isInteger(value)) &&
    (range.min === undefined || (range.above === true ? value > range.min : value >= range.min)) &&
    (range.max === undefined || value <= range.max)
  return ok
    ? Effect.succeed(value)
    : Effect.fail(`--${name} must be ${expected(range)}, got '${Text.safe(text.slice(0, 40))}'`)
}

/** A numeric flag `--name <pseudoName>`, checked against `range`. */
export const number = (name: string, pseudoName: string, range: Range): Options.Options<number> =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.mapEffect((text) =>
      Effect.mapError(parse(name, range)(text), (message) => ValidationError.invalidValue(HelpDoc.p(message)))
    )
  )

/** A flag `--name` that takes one of `choices`. */
export const choice = <const C extends string>(name: string, choices: ReadonlyArray<C>): Options.Options<C> =>
  Options.text(name).pipe(
    Options.withPseudoName(choices.join(" | ")),
    Options.mapEffect((text) =>
      (choices as ReadonlyArray<string>).includes(text)
        ? Effect.succeed(text as C)
        : Effect.fail(
          ValidationError.invalidValue(
            HelpDoc.p(`--${name} must be one of ${choices.join(", ")}, got '${Text.safe(text.slice(0, 40))}'`)
          )
        )
    )
  )
