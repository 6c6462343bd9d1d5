/**
 * `gcx sandbox [--port N] [fault flags]`: runs the sandbox until Ctrl+C
 * (`run/SandboxCommand`, loaded when the command runs). The flags are those of
 * `pnpm sandbox`, but for the admin key, a secret: `GCX_SANDBOX_ADMIN_KEY`
 * only, else a random one.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flag from "../Flag.js"
import * as Help from "../Help.js"
import * as Lazy from "../Lazy.js"

/** The port `gcx sandbox` listens on by default, as `pnpm sandbox` does. */
export const defaultPort = 4010

/** The flags of `gcx sandbox`. */
export const options = {
  port: Flag.number("port", "n", { integer: true, min: 0, max: 65535 }).pipe(
    Options.withDescription(`port of the API (default ${defaultPort}; 0: a free port)`),
    Options.withDefault(defaultPort)
  ),
  host: Options.text("host").pipe(
    Options.withPseudoName("host"),
    Options.withDescription(
      "interface to listen on (default 127.0.0.1); one that is not loopback (0.0.0.0) needs GCX_SANDBOX_ADMIN_KEY"
    ),
    Options.optional
  ),
  allowedHost: Options.text("allowed-host").pipe(
    Options.withPseudoName("name"),
    Options.withDescription(
      "a Host name to serve besides localhost, 127.0.0.1, [::1] and the bound address, repeatable (others get 421)"
    ),
    Options.repeated
  ),
  stage: Options.text("stage").pipe(
    Options.withPseudoName("segment"),
    Options.withDescription("stage segment of the quote paths (default sandbox)"),
    Options.optional
  ),
  timeScale: Flag.number("time-scale", "x", { min: 0 }).pipe(
    Options.withDescription("multiply scenario durations (default 1; 0.1 = ten times faster)"),
    Options.optional
  ),
  tokenLifetime: Flag.number("token-lifetime", "seconds", { integer: true, min: 0 }).pipe(
    Options.withDescription("access token lifetime in seconds (default 3600)"),
    Options.optional
  ),
  seed: Options.text("seed").pipe(
    Options.withPseudoName("seed"),
    Options.withDescription("seed of the fault generator (default 0)"),
    Options.optional
  ),
  fault: Options.text("fault").pipe(
    Options.withPseudoName("rule"),
    Options.withDescription(
      "a fault rule, repeatable: route:kind[:option...], e.g. createQuote:status503:0.2:retry-after=1 " +
        "(routes token heartbeat createQuote getTransaction any; kinds status503 status500 reset dropAnswer " +
        "latency malformed stall; options p= times= seq= retry-after= ms=)"
    ),
    Options.repeated
  ),
  latency: Options.text("latency").pipe(
    Options.withPseudoName("ms"),
    Options.withDescription("added latency on every route: 250 or 100-300 (milliseconds)"),
    Options.optional
  ),
  quiet: Options.boolean("quiet").pipe(Options.withDescription("no per-request log lines"))
}

/** The parsed flags. */
export type Flags = Command.Command.ParseConfig<typeof options>

/** The `sandbox` command. */
export const command = Command.make("sandbox", options, Lazy.handler(() => import("../run/SandboxCommand.js"))).pipe(
  Command.withDescription(
    Help.describe(
      "Run the sandbox: a simulated partner service with scenario cards and faults; it prints the GCX_* variables that point gcx at it",
      [[
        "GCX_SANDBOX_ADMIN_KEY",
        "key of the sandbox's admin API (secret: environment only; default a random one per start)"
      ]]
    )
  )
)
