/**
 * The help of each `gcx` command: its summary, then the `GCX_*` variables it
 * reads (names only: a value, secret or not, is never shown) and the exit
 * codes; and the hint every usage error ends with, `(see gcx <command> --help)`.
 *
 * effect/cli renders the summary, the usage and the flags (`CliOutput`);
 * `formatter` adds the ENVIRONMENT and EXIT CODES sections of the commands
 * that name their variables (`describe`), and `presenter` prints help and
 * version on stdout and leaves usage errors to `ExitCode.report`, which
 * prints them as one `error:` line.
 */
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import type * as HelpDoc from "effect/cli/HelpDoc"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** A variable and what it does. */
export type Variable = readonly [name: string, description: string]

/** The connection variables, read by `heartbeat`, `quote`, `watch` and `batch`. */
export const connectionVariables: ReadonlyArray<Variable> = [
  ["GCX_ENV", "sandbox, production or custom: the default stage segment (default custom)"],
  ["GCX_BASE_URL", "base URL of the API (required once any connection setting is given)"],
  ["GCX_AUTH_URL", "base URL of the token endpoint (required)"],
  ["GCX_STAGE", "stage segment of the quote paths; / for none"],
  ["GCX_CLIENT_ID", "partner client id (required)"],
  ["GCX_CLIENT_SECRET", "partner client secret (required; secret: environment only, never a flag)"],
  ["GCX_API_KEY", "partner API key (required; secret: environment only, never a flag)"],
  ["GCX_SCOPE", "OAuth scope of the token request"],
  ["GCX_AUTH_STYLE", "body or basic: how the client secret is sent (default body)"],
  ["GCX_SANDBOX_TIME_SCALE", "time scale of the embedded sandbox, a number above 0 (default 1)"]
]

/** The variables of durable quotes (`--durable`, `gcx result`, `gcx runner`). */
export const durableVariables = {
  databaseUrl: [
    "GCX_DATABASE_URL",
    "PostgreSQL shared by the runners and client-only nodes, postgres://user:password@host:5432/database " +
    "(required; secret)"
  ],
  clientDatabaseUrl: [
    "GCX_DATABASE_URL",
    "PostgreSQL of the runners, postgres://user:password@host:5432/database (secret): set, this node is " +
    "client-only on those runners; unset, durable quotes run embedded on GCX_DATABASE_FILE"
  ],
  databaseFile: [
    "GCX_DATABASE_FILE",
    "SQLite file of the embedded durable quotes (default .gcx/gcx.db; the embedded sandbox's are in <name>.sandbox.db beside it)"
  ],
  dataKey: [
    "GCX_DATA_KEY",
    "key that seals the cards in the database: 32 random bytes in base64, made with `openssl rand -base64 32`, " +
    "the same on every node (required; secret)"
  ],
  previousDataKey: [
    "GCX_DATA_KEY_PREVIOUS",
    "the key before a rotation, same format: opens the cards it sealed, never seals (secret)"
  ]
} as const satisfies Record<string, Variable>

/** The variables of `--durable`. */
export const durableFlagVariables: ReadonlyArray<Variable> = [
  durableVariables.clientDatabaseUrl,
  durableVariables.databaseFile,
  durableVariables.dataKey,
  durableVariables.previousDataKey
]

/** Whether `name` is a connection setting, one that the embedded sandbox (`--embedded`) stands in for. */
export const isConnectionVariable = (name: string): boolean =>
  name !== "GCX_SANDBOX_TIME_SCALE" && connectionVariables.some(([variable]) => variable === name)

/** The output variables, read by every command. */
export const outputVariables: ReadonlyArray<Variable> = [
  ["NO_COLOR", "set (non-empty): no ANSI colours; a stdout that is not a terminal has none either"]
]

/** The exit codes (see `ExitCode`). */
export const exitCodes: ReadonlyArray<readonly [code: number, meaning: string]> = [
  [0, "completed (gcx serve and gcx runner: also stopped by SIGTERM, after a clean shutdown)"],
  [1, "unexpected failure inside gcx (a bug)"],
  [2, "usage or configuration: bad flags or GCX_* variables, refused credentials, invalid card input, a refused --out"],
  [3, "card outcome: the card was refused"],
  [4, "merchant outcome: the merchant could not be reached (retry later)"],
  [5, "service failure: the service or the network failed, or the quote did not complete in time"],
  [130, "interrupted (Ctrl+C)"]
]

/** The variables a command reads: an annotation of the command, shown in its help (`formatter`). */
export class Variables extends Context.Service<Variables, ReadonlyArray<Variable>>()("@gcx/cli/Help/Variables") {}

/**
 * A command that runs on its own and also has subcommands (`gcx serve`, `gcx serve keys …`): an
 * annotation (`runsAlone`), so that its usage shows both forms, not only `<subcommand>`.
 */
export class RunsAlone extends Context.Service<RunsAlone, true>()("@gcx/cli/Help/RunsAlone") {}

/** Marks a command with subcommands that also runs without one (`RunsAlone`). */
export const runsAlone = <const Name extends string, Input, ContextInput, E, R>(
  command: Command.Command<Name, Input, ContextInput, E, R>
): Command.Command<Name, Input, ContextInput, E, R> => command.pipe(Command.annotate(RunsAlone, true))

/** The usage of a doc: both forms for a command that `runsAlone`. */
const usageOf = (doc: HelpDoc.HelpDoc): HelpDoc.HelpDoc =>
  Option.isSome(Context.getOption(doc.annotations, RunsAlone)) && doc.usage.includes(" <subcommand> ")
    ? {
      ...doc,
      usage: `${doc.usage.replace(" <subcommand> ", " ")}
  ${doc.usage}`
    }
    : doc

/**
 * A command's description: its summary, and the variables it reads; its help
 * ends with them, the output variables and the exit codes.
 */
export const describe =
  (summary: string, variables: ReadonlyArray<Variable>) =>
  <const Name extends string, Input, ContextInput, E, R>(
    command: Command.Command<Name, Input, ContextInput, E, R>
  ): Command.Command<Name, Input, ContextInput, E, R> =>
    command.pipe(Command.withDescription(summary), Command.annotate(Variables, variables))

/** A list in the layout of gcx's help: each term on a line of its own, its text below, indented. */
const list = (rows: ReadonlyArray<readonly [string, string]>): ReadonlyArray<string> =>
  rows.flatMap(([term, text]) => [term, "", `  ${text}`, ""])

/** The ENVIRONMENT and EXIT CODES sections for the variables of a command. */
export const sections = (
  variables: ReadonlyArray<Variable>,
  heading: (title: string) => string = (title) => title
): string =>
  [
    heading("ENVIRONMENT"),
    "",
    ...list([...variables, ...outputVariables]),
    heading("EXIT CODES"),
    "",
    ...list(exitCodes.map(([code, meaning]) => [String(code), meaning] as const))
  ].join("\n").trimEnd()

/**
 * The formatter of gcx's help: effect/cli's, with colours or not, then the
 * sections of a command that names its variables (`describe`); `--version`
 * prints the version alone.
 */
export const formatter = (colors: boolean): CliOutput.Formatter => {
  const base = CliOutput.defaultFormatter({ colors })
  const heading = (title: string) => (colors ? `\u001b[1m${title}\u001b[0m` : title)
  return {
    ...base,
    formatHelpDoc: (doc: HelpDoc.HelpDoc) =>
      Option.match(Context.getOption(doc.annotations, Variables), {
        onNone: () => base.formatHelpDoc(usageOf(doc)),
        onSome: (variables) => `${base.formatHelpDoc(usageOf(doc))}\n\n${sections(variables, heading)}`
      }),
    formatVersion: (_name, version) => version
  }
}

/**
 * What gcx presents itself: help and version on stdout, with `formatter`; a
 * usage error is left to `ExitCode.report`, as one line on stderr, with no
 * help or usage tree.
 */
export const presenter: CliOutput.Presenter = {
  present: (event) =>
    CliOutput.Formatter.use((formatter) => {
      switch (event._tag) {
        case "Help":
          return Console.log(formatter.formatHelpDoc(event.helpDoc))
        case "Version":
          return Console.log(formatter.formatVersion(event.name, event.version))
        case "InvalidInvocation":
          return Effect.void
      }
    })
}

/** Runs `effect` with gcx's help formatter (with or without colours) and presenter. */
export const provide = (colors: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  effect.pipe(
    Effect.provideService(CliOutput.Formatter, formatter(colors)),
    Effect.provideService(CliOutput.Presenter, presenter)
  )

/** The subcommands of `gcx`. */
export const commands = ["heartbeat", "quote", "watch", "batch", "result", "sandbox", "runner", "serve"] as const

/** The subcommands of a subcommand: `gcx serve keys create`. */
const nested: Readonly<Record<string, ReadonlyArray<string>>> = {
  serve: ["keys"],
  keys: ["create", "list", "revoke"]
}

/** The subcommand a command line runs (`process.argv`), if any, with its own subcommands (`serve keys create`). */
export const commandOf = (argv: ReadonlyArray<string>): string | undefined => {
  const args = argv.slice(2)
  const start = args.findIndex((arg) => (commands as ReadonlyArray<string>).includes(arg))
  if (start < 0) return undefined
  const path = [args[start]!]
  for (const arg of args.slice(start + 1)) {
    if (!nested[path[path.length - 1]!]?.includes(arg)) break
    path.push(arg)
  }
  return path.join(" ")
}

/** The hint a usage error ends with: `(see gcx quote --help)`. */
export const hint = (command: string | undefined): string =>
  `(see gcx${command === undefined ? "" : ` ${command}`} --help)`
