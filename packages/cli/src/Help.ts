/**
 * The help of each `gcx` command: its summary, then the `GCX_*` variables it
 * reads (names only: a value, secret or not, is never shown) and the exit
 * codes; and the hint every usage error ends with, `(see gcx <command> --help)`.
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Span from "@effect/cli/HelpDoc/Span"
import * as Arr from "effect/Array"

/** A variable and what it does. */
export type Variable = readonly [name: string, description: string]

/** The connection variables, read by `heartbeat`, `quote`, `watch` and `batch`. */
export const connectionVariables: ReadonlyArray<Variable> = [
  ["GCX_ENV", "sandbox, production or custom: the default stage segment (default custom)"],
  ["GCX_BASE_URL", "base URL of the API (required once any connection setting is given)"],
  ["GCX_AUTH_URL", "base URL of the token endpoint (required)"],
  ["GCX_STAGE", "stage segment of the quote paths; empty for none"],
  ["GCX_CLIENT_ID", "partner client id (required)"],
  ["GCX_CLIENT_SECRET", "partner client secret (required; secret: environment only, never a flag)"],
  ["GCX_API_KEY", "partner API key (required; secret: environment only, never a flag)"],
  ["GCX_SCOPE", "OAuth scope of the token request"],
  ["GCX_AUTH_STYLE", "body or basic: how the client secret is sent (default body)"],
  ["GCX_SANDBOX_TIME_SCALE", "time scale of the embedded sandbox, a number above 0 (default 1)"]
]

/** The output variables, read by every command. */
export const outputVariables: ReadonlyArray<Variable> = [
  ["NO_COLOR", "set (non-empty): no ANSI colours; a stdout that is not a terminal has none either"]
]

/** The exit codes (see `ExitCode`). */
export const exitCodes: ReadonlyArray<readonly [code: number, meaning: string]> = [
  [0, "completed"],
  [1, "unexpected failure inside gcx (a bug)"],
  [2, "usage or configuration: bad flags or GCX_* variables, refused credentials, invalid card input, a refused --out"],
  [3, "card outcome: the card was refused"],
  [4, "merchant outcome: the merchant could not be reached (retry later)"],
  [5, "service failure: the service or the network failed, or the quote did not complete in time"],
  [130, "interrupted (Ctrl+C)"]
]

const list = (rows: ReadonlyArray<readonly [string, string]>): HelpDoc.HelpDoc =>
  Arr.match(rows.map(([term, text]) => [Span.code(term), HelpDoc.p(text)] as [Span.Span, HelpDoc.HelpDoc]), {
    onEmpty: () => HelpDoc.empty,
    onNonEmpty: (items) => HelpDoc.descriptionList(items)
  })

/** A command's description: its summary, the variables it reads, the exit codes. */
export const describe = (summary: string, variables: ReadonlyArray<Variable>): HelpDoc.HelpDoc =>
  HelpDoc.blocks([
    HelpDoc.p(summary),
    HelpDoc.h2("ENVIRONMENT"),
    list([...variables, ...outputVariables]),
    HelpDoc.h2("EXIT CODES"),
    list(exitCodes.map(([code, meaning]) => [String(code), meaning] as const))
  ])

/** The subcommands of `gcx`. */
export const commands = ["heartbeat", "quote", "watch", "batch", "sandbox", "runner"] as const

/** The subcommand a command line runs (`process.argv`), if any. */
export const commandOf = (argv: ReadonlyArray<string>): string | undefined =>
  argv.slice(2).find((arg) => (commands as ReadonlyArray<string>).includes(arg))

/** The hint a usage error ends with: `(see gcx quote --help)`. */
export const hint = (command: string | undefined): string =>
  `(see gcx${command === undefined ? "" : ` ${command}`} --help)`
