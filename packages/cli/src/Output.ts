/**
 * Where and how `gcx` writes, whatever the command:
 *
 * - Colours: off when `NO_COLOR` is set (to anything but the empty string) or
 *   when the stream is not a terminal. Then the console strips the ANSI codes
 *   of everything printed through it, help and usage included.
 * - Logs (`--log-level`) go to stderr, one logfmt line each with control
 *   characters escaped, so that they never mix with the `--json` stream.
 * - `--log-level` is accepted anywhere on the command line (`gcx quote
 *   --log-level debug ...` as well as `gcx --log-level debug quote ...`).
 * - Usage errors: what @effect/cli prints on stderr while it parses the
 *   command line (a usage tree, a schema tree) is dropped; `ExitCode.report`
 *   prints the one `error:` line instead.
 * - A closed stdout or stderr (`gcx ... | head -1`) is not an error: what
 *   follows is dropped and the command runs to its end, with its usual exit code.
 */
import type * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Text from "./Text.js"

/** Whether `NO_COLOR` asks for no colours (set, and not empty). */
export const noColor = (env: Readonly<Record<string, string | undefined>>): boolean =>
  env.NO_COLOR !== undefined && env.NO_COLOR !== ""

/** Whether a stream may carry colours: a terminal, and no `NO_COLOR`. */
export const colors = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): boolean => stream.isTTY === true && !noColor(env)

/** How the console writes: which streams are plain, and whether the command line is still being parsed. */
export interface Settings {
  readonly plainStdout: boolean
  readonly plainStderr: boolean
  /** `true` until a command's handler starts: stderr output of the parser is dropped meanwhile. */
  readonly parsing: Ref.Ref<boolean>
}

const plainArgs = (plain: boolean, args: ReadonlyArray<unknown>): ReadonlyArray<unknown> =>
  plain ? args.map((arg) => (typeof arg === "string" ? Text.stripAnsi(arg) : arg)) : args

/** The console of `gcx` over `base` (see the module notes). */
export const console = (base: Console.Console, settings: Settings): Console.Console => {
  const stdout =
    (write: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) => (...args: ReadonlyArray<unknown>) =>
      write(...plainArgs(settings.plainStdout, args))
  const stderr =
    (write: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) => (...args: ReadonlyArray<unknown>) =>
      Effect.flatMap(
        Ref.get(settings.parsing),
        (parsing) => parsing ? Effect.void : write(...plainArgs(settings.plainStderr, args))
      )
  return {
    ...base,
    log: stdout(base.log),
    info: stdout(base.info),
    debug: stdout(base.debug),
    error: stderr(base.error),
    warn: stderr(base.warn)
  }
}

/** The logger of `gcx`: logfmt lines on stderr, control characters escaped. */
export const logger: Logger.Logger<unknown, void> = Logger.withConsoleError(Logger.map(Logger.logfmtLogger, Text.safe))

/** Runs `effect` with `logger` as its only logger (no default or pretty logger writing to stdout). */
export const withLogger = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, FiberRef.currentLoggers, HashSet.make(logger))

/** Whether the command line is still being parsed (`Settings.parsing`), for the handlers to end. */
export class Parsing extends Context.Tag("@gcx/cli/Output/Parsing")<Parsing, Ref.Ref<boolean>>() {}

/** Marks the end of parsing, as a command's handler starts: from here on, stderr output is printed. */
export const parsed: Effect.Effect<void> = Effect.flatMap(
  Effect.serviceOption(Parsing),
  Option.match({ onNone: () => Effect.void, onSome: (parsing) => Ref.set(parsing, false) })
)

/** The settings for this process's streams and environment. */
export const settings: Effect.Effect<Settings> = Effect.map(Ref.make(true), (parsing) => ({
  plainStdout: !colors(process.stdout),
  plainStderr: !colors(process.stderr),
  parsing
}))

/**
 * Runs `effect`, for the command line `argv`, with the console, the logger
 * and the log level of `gcx` (see the module notes), and `Parsing` for the
 * handlers to end.
 */
export const provide =
  (argv: ReadonlyArray<string>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, Parsing>> =>
    Effect.flatMap(settings, (settings) =>
      Effect.consoleWith((base) =>
        Option.match(logLevelOf(argv), {
          onNone: () => effect,
          onSome: (level) => Logger.withMinimumLogLevel(effect, level)
        }).pipe(
          Effect.provideService(Parsing, settings.parsing),
          Effect.withConsole(console(base, settings)),
          withLogger
        )
      ))

/**
 * The command line with `--log-level X` (or `--log-level=X`) moved before the
 * subcommand, where @effect/cli reads it; arguments after `--` are left alone.
 */
export const hoistLogLevel = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const [runtime, script, ...args] = argv
  const end = args.indexOf("--")
  const options = end < 0 ? args : args.slice(0, end)
  const hoisted: Array<string> = []
  const rest: Array<string> = []
  for (let i = 0; i < options.length; i++) {
    const arg = options[i]!
    if (arg.startsWith("--log-level=")) hoisted.push(arg)
    else if (arg === "--log-level" && i + 1 < options.length) hoisted.push(arg, options[++i]!)
    else rest.push(arg)
  }
  return [runtime ?? "", script ?? "", ...hoisted, ...rest, ...(end < 0 ? [] : args.slice(end))]
}

const levels: Readonly<Record<string, LogLevel.LogLevel>> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

/**
 * The level `--log-level` asks for, anywhere on the command line: it applies
 * to the whole run, the report of a failure included (@effect/cli applies it
 * to the command's handler only).
 */
export const logLevelOf = (argv: ReadonlyArray<string>): Option.Option<LogLevel.LogLevel> => {
  const args = argv.slice(2)
  const end = args.indexOf("--")
  const options = end < 0 ? args : args.slice(0, end)
  const index = options.findIndex((arg) => arg === "--log-level" || arg.startsWith("--log-level="))
  if (index < 0) return Option.none()
  const value = options[index]!.startsWith("--log-level=") ? options[index]!.slice(12) : options[index + 1]
  return Option.fromNullable(value === undefined ? undefined : levels[value])
}

/**
 * Makes a closed stdout or stderr harmless: Node reports a write to a pipe
 * whose reader has gone (`EPIPE`) as an `error` event, which crashes the
 * process with a stack trace when nobody listens. Later writes are dropped.
 */
export const survivePipeClose = (streams: ReadonlyArray<NodeJS.WriteStream> = [process.stdout, process.stderr]) => {
  for (const stream of streams) stream.on("error", () => {})
}
