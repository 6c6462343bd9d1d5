/**
 * Where and how `gcx` writes, whatever the command:
 *
 * - Colours: off when `NO_COLOR` is set (to anything but the empty string) or
 *   when the stream is not a terminal. Then the console strips the ANSI codes
 *   of everything printed through it, help and usage included.
 * - Logs (`--log-level`) go to stderr, one logfmt line each with control
 *   characters escaped, so that they never mix with the `--json` stream.
 * - `--log-level` is accepted anywhere on the command line (`gcx quote
 *   --log-level debug ...` as well as `gcx --log-level debug quote ...`), and
 *   applies to the whole run, the report of a failure included.
 * - Usage errors: effect/cli prints no usage tree or help for them
 *   (`Help.presenter`); `ExitCode.report` prints the one `error:` line.
 * - A closed stdout or stderr (`gcx ... | head -1`) is not an error: what
 *   follows is dropped and the command runs to its end, with its usual exit code.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Text from "./Text.js"

/** Whether `NO_COLOR` asks for no colours (set, and not empty). */
export const noColor = (env: Readonly<Record<string, string | undefined>>): boolean =>
  env.NO_COLOR !== undefined && env.NO_COLOR !== ""

/** Whether a stream may carry colours: a terminal, and no `NO_COLOR`. */
export const colors = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): boolean => stream.isTTY === true && !noColor(env)

/** How the console writes: which streams are plain (no ANSI codes). */
export interface Settings {
  readonly plainStdout: boolean
  readonly plainStderr: boolean
}

const plainArgs = (plain: boolean, args: ReadonlyArray<unknown>): ReadonlyArray<unknown> =>
  plain ? args.map((arg) => (typeof arg === "string" ? Text.stripAnsi(arg) : arg)) : args

/** The console of `gcx` over `base` (see the module notes). */
export const console = (base: Console.Console, settings: Settings): Console.Console => {
  const writer = (plain: boolean, write: (...args: ReadonlyArray<unknown>) => void) =>
  (
    ...args: ReadonlyArray<unknown>
  ): void => write(...plainArgs(plain, args))
  return {
    ...base,
    log: writer(settings.plainStdout, (...args) => base.log(...args)),
    info: writer(settings.plainStdout, (...args) => base.info(...args)),
    debug: writer(settings.plainStdout, (...args) => base.debug(...args)),
    error: writer(settings.plainStderr, (...args) => base.error(...args)),
    warn: writer(settings.plainStderr, (...args) => base.warn(...args))
  }
}

/** The first signal that asked this process to stop (SIGINT or SIGTERM), as `watchShutdown` saw it. */
let stopSignal: "SIGINT" | "SIGTERM" | undefined

/** The first signal that asked this process to stop, if one has (`watchShutdown`). */
export const stopAsked = (): "SIGINT" | "SIGTERM" | undefined => stopSignal

/**
 * Notes when the process is asked to stop (SIGINT, SIGTERM), before the runtime interrupts the
 * command: from then on, the cluster's warnings are its shutdown's (see `logger`).
 */
export const watchShutdown = (): void => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.prependListener(signal, () => {
      stopSignal ??= signal
    })
  }
}

/**
 * Whether a log line is a warning of effect/cluster's internals while the process stops (a client
 * or an embedded runner that stops sees "No healthy runners available"): shown at DEBUG only. Errors,
 * and the cluster's warnings while the process runs, are shown as they are.
 */
const isShutdownNoise = (options: Logger.Options<unknown>): boolean => {
  if (stopSignal === undefined || options.logLevel !== "Warn") return false
  const module = options.fiber.getRef(References.CurrentLogAnnotations)["module"]
  return typeof module === "string" && module.startsWith("effect/cluster/")
}

const logfmt = Logger.withConsoleError(Logger.map(Logger.formatLogFmt, Text.safe))

/**
 * The logger of `gcx`: logfmt lines on stderr, control characters escaped; the cluster's warnings
 * while the process stops are shown at DEBUG (`isShutdownNoise`).
 */
export const logger: Logger.Logger<unknown, void> = Logger.make((options) => {
  if (!isShutdownNoise(options)) return logfmt.log(options)
  if (LogLevel.isLessThanOrEqualTo(options.fiber.getRef(References.MinimumLogLevel), "Debug")) {
    logfmt.log({ ...options, logLevel: "Debug" })
  }
})

/** Runs `effect` with `logger` as its only logger (no default or pretty logger writing to stdout). */
export const withLogger = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, Logger.CurrentLoggers, new Set([logger]))

/** The settings for this process's streams and environment. */
export const settings = (): Settings => ({
  plainStdout: !colors(process.stdout),
  plainStderr: !colors(process.stderr)
})

/**
 * Runs `effect`, for the command line `argv`, with the console, the logger
 * and the log level of `gcx` (see the module notes).
 */
export const provide =
  (argv: ReadonlyArray<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Console.consoleWith((base) =>
      Option.match(logLevelOf(argv), {
        onNone: () => effect,
        onSome: (level) => Effect.provideService(effect, References.MinimumLogLevel, level)
      }).pipe(
        Effect.provideService(Console.Console, console(base, settings())),
        withLogger
      )
    )

/**
 * The command line with `--log-level X` (or `--log-level=X`) moved before the
 * subcommand; arguments after `--` are left alone.
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
  all: "All",
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  warning: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None"
}

/**
 * The level `--log-level` asks for, anywhere on the command line: it applies
 * to the whole run, the report of a failure included (effect/cli applies it
 * to the command's handler only).
 */
export const logLevelOf = (argv: ReadonlyArray<string>): Option.Option<LogLevel.LogLevel> => {
  const args = argv.slice(2)
  const end = args.indexOf("--")
  const options = end < 0 ? args : args.slice(0, end)
  const index = options.findIndex((arg) => arg === "--log-level" || arg.startsWith("--log-level="))
  if (index < 0) return Option.none()
  const value = options[index]!.startsWith("--log-level=") ? options[index]!.slice(12) : options[index + 1]
  return Option.fromUndefinedOr(value === undefined ? undefined : levels[value])
}

/**
 * Makes a closed stdout or stderr harmless: Node reports a write to a pipe
 * whose reader has gone (`EPIPE`) as an `error` event, which crashes the
 * process with a stack trace when nobody listens. Later writes are dropped.
 */
export const survivePipeClose = (streams: ReadonlyArray<NodeJS.WriteStream> = [process.stdout, process.stderr]) => {
  for (const stream of streams) stream.on("error", () => {})
}
