/**
 * `gcx sandbox [--port N] [fault flags]`: runs the sandbox until Ctrl+C
 * (`run/SandboxCommand`, loaded when the command runs). The flags are those of
 * `pnpm sandbox`, but for the admin key, a secret: `GCX_SANDBOX_ADMIN_KEY`
 * only, else a random one.
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as GcxFlag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

/** The port `gcx sandbox` listens on by default, as `pnpm sandbox` does. */
export const defaultPort = 4010

/** A flag `--name <metavar>` with a text value, optional. */
const text = (name: string, metavar: string, description: string) =>
  Flag.String(name).pipe(Flag.withMetavar(metavar), Flag.withDescription(description), Flag.optional)

/** A flag `--name <metavar>` that may be given any number of times. */
const repeated = (name: string, metavar: string, description: string) =>
  Flag.String(name).pipe(Flag.withMetavar(metavar), Flag.withDescription(description), Flag.atLeast(0))

/** The flags of `gcx sandbox`. */
export const options = {
  port: GcxFlag.number("port", "n", { integer: true, min: 0, max: 65535 }).pipe(
    Flag.withDescription(`port of the API (default ${defaultPort}; 0: a free port)`),
    Flag.withDefault(defaultPort)
  ),
  host: text(
    "host",
    "host",
    "interface to listen on (default 127.0.0.1); one that is not loopback (0.0.0.0) needs GCX_SANDBOX_ADMIN_KEY"
  ),
  allowedHost: repeated(
    "allowed-host",
    "name",
    "a Host name to serve besides localhost, 127.0.0.1, [::1] and the bound address, repeatable (others get 421)"
  ),
  stage: text("stage", "segment", "stage segment of the quote paths (default sandbox)"),
  timeScale: GcxFlag.number("time-scale", "x", { min: 0 }).pipe(
    Flag.withDescription("multiply scenario durations (default 1; 0.1 = ten times faster)"),
    Flag.optional
  ),
  tokenLifetime: GcxFlag.number("token-lifetime", "seconds", { integer: true, min: 0 }).pipe(
    Flag.withDescription("access token lifetime in seconds (default 3600)"),
    Flag.optional
  ),
  seed: text("seed", "seed", "seed of the fault generator (default 0)"),
  fault: repeated(
    "fault",
    "rule",
    "a fault rule, repeatable: route:kind[:option...], e.g. createQuote:status503:0.2:retry-after=1 " +
      "(routes token heartbeat createQuote getTransaction any; kinds status503 status500 reset dropAnswer " +
      "latency malformed stall; options p= times= seq= retry-after= ms=)"
  ),
  latency: text("latency", "ms", "added latency on every route: 250 or 100-300 (milliseconds)"),
  maxTransactions: GcxFlag.number("max-transactions", "n", { integer: true, min: 1 }).pipe(
    Flag.withDescription("transactions (and requestIds) kept; the oldest finished are evicted first (default 100000)"),
    Flag.optional
  ),
  maxDashboardStreams: GcxFlag.number("max-dashboard-streams", "n", { integer: true, min: 1 }).pipe(
    Flag.withDescription("dashboard event streams open at once; beyond, 503 (default 16)"),
    Flag.optional
  ),
  quiet: Flag.Boolean("quiet").pipe(Flag.withDescription("no per-request log lines"), Flag.withDefault(false))
}

/** The parsed flags. */
export type Flags = Command.Command.Config.Infer<typeof options>

/** The `sandbox` command. */
export const command = Command.make("sandbox", options, Lazy.handler(() => import("../run/SandboxCommand.js"))).pipe(
  Help.describe(
    "Run the sandbox: a simulated partner service with scenario cards and faults; it prints the GCX_* variables that point gcx at it",
    [[
      "GCX_SANDBOX_ADMIN_KEY",
      "key of the sandbox's admin API (secret: environment only; default a random one per start)"
    ]]
  ),
  Command.withShortDescription("Run the sandbox, a simulated partner service")
)
