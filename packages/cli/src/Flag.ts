/**
 * Flags whose errors name the flag: `--deadline must be a number above 0,
 * got 'abc'`, `--env must be one of sandbox, production, custom, got 'x'`,
 * instead of effect/cli's `Invalid value for flag --deadline: "abc".
 * Expected: ...`.
 */
import * as Argument from "effect/cli/Argument"
import * as CliError from "effect/cli/CliError"
import * as CliFlag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as NodePath from "node:path"
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

/** A usage error that says what is wrong in its own words. */
const invalid = (message: string) => new CliError.ValidationError({ message })

/** A numeric flag `--name <metavar>`, checked against `range`. */
export const number = (name: string, metavar: string, range: Range): CliFlag.Flag<number> =>
  CliFlag.String(name).pipe(
    CliFlag.withMetavar(metavar),
    CliFlag.mapEffect((text) => Effect.mapError(parse(name, range)(text), invalid))
  )

/** A flag `--name` that takes one of `choices`. */
export const choice = <const C extends string>(name: string, choices: ReadonlyArray<C>): CliFlag.Flag<C> =>
  CliFlag.String(name).pipe(
    CliFlag.withMetavar(choices.join(" | ")),
    CliFlag.mapEffect((text) =>
      (choices as ReadonlyArray<string>).includes(text)
        ? Effect.succeed(text as C)
        : Effect.fail(invalid(`--${name} must be one of ${choices.join(", ")}, got '${Text.safe(text.slice(0, 40))}'`))
    )
  )

/**
 * An argument `<name>` naming a file that must exist, kept as the user wrote
 * it (messages show the path as typed): `Path '<path>' must exist`.
 */
export const existingFile = (name: string): Argument.Argument<string> =>
  Argument.String(name).pipe(
    Argument.withMetavar("file"),
    Argument.mapEffect((path) =>
      Effect.flatMap(FileSystem.FileSystem, (fs) => fs.stat(path)).pipe(
        Effect.matchEffect({
          onFailure: () => Effect.fail(invalid(`Path '${Text.safe(path)}' must exist`)),
          onSuccess: (info) =>
            info.type === "File"
              ? Effect.succeed(path)
              : Effect.fail(invalid(`Expected path '${Text.safe(path)}' to be a regular file`))
        })
      )
    )
  )

/**
 * A flag's value naming a file to write: its folder must exist (the file need not), checked when the
 * command line is read, before any I/O of the command: `--out /missing/r.jsonl: the folder /missing does not exist`.
 */
export const writableFile =
  (name: string) => (path: string): Effect.Effect<string, CliError.CliError, FileSystem.FileSystem> => {
    const folder = NodePath.dirname(path)
    return Effect.flatMap(FileSystem.FileSystem, (fs) => fs.stat(folder)).pipe(
      Effect.matchEffect({
        onFailure: () =>
          Effect.fail(invalid(`--${name} ${Text.safe(path)}: the folder ${Text.safe(folder)} does not exist`)),
        onSuccess: (info) =>
          info.type === "Directory"
            ? Effect.succeed(path)
            : Effect.fail(invalid(`--${name} ${Text.safe(path)}: ${Text.safe(folder)} is not a folder`))
      })
    )
  }
