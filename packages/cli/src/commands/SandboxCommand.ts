/**
 * `gcx sandbox [--port N] [fault flags]`: runs the sandbox (the simulated
 * partner service of @gcx/sandbox) until Ctrl+C, and prints its addresses,
 * the `GCX_*` variables that point gcx at it, and the scenario cards.
 * The flags are those of `pnpm sandbox`.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type { ServeError } from "@effect/platform/HttpServerError"
import * as Faults from "@gcx/sandbox/Faults"
import type * as Sandbox from "@gcx/sandbox/Sandbox"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { CliError, ExitCode } from "../ExitCode.js"
import * as Flag from "../Flag.js"
import * as Help from "../Help.js"

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
    Options.withDescription("interface to listen on (default 127.0.0.1)"),
    Options.optional
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

/** The sandbox options for the flags, or what is wrong with a fault rule. */
export const sandboxOptions = (flags: Flags): Either.Either<Sandbox.SandboxOptions, CliError> =>
  Either.map(
    Either.all(
      [...flags.fault, ...Option.toArray(Option.map(flags.latency, (ms) => `any:latency:ms=${ms}`))].map(
        Faults.parseRule
      )
    ),
    (faults): Sandbox.SandboxOptions => ({
      port: flags.port,
      host: Option.getOrUndefined(flags.host),
      stage: Option.getOrUndefined(flags.stage),
      timeScale: Option.getOrUndefined(flags.timeScale),
      tokenLifetimeSeconds: Option.getOrUndefined(flags.tokenLifetime),
      seed: Option.getOrUndefined(Option.map(flags.seed, (seed) => (Number.isNaN(Number(seed)) ? seed : Number(seed)))),
      faults,
      logLevel: flags.quiet ? "None" : "Info"
    })
  ).pipe(Either.mapLeft((message) => new CliError({ code: ExitCode.Usage, message })))

/** Runs a sandbox until interrupted; the sandbox is loaded on demand, so that other commands start faster. */
export const run = (options: Sandbox.SandboxOptions): Effect.Effect<never, ServeError> =>
  Effect.gen(function*() {
    const { banner, layer, SandboxServer }: typeof Sandbox = yield* Effect.promise(() => import("@gcx/sandbox/Sandbox"))
    return yield* Effect.gen(function*() {
      yield* Console.log(banner(yield* SandboxServer))
      return yield* Effect.never
    }).pipe(Effect.provide(layer(options)))
  })

/** The `sandbox` command. */
export const command = Command.make(
  "sandbox",
  options,
  (flags) => Effect.flatMap(sandboxOptions(flags), run)
).pipe(Command.withDescription(
  Help.describe(
    "Run the sandbox: a simulated partner service with scenario cards and faults; it prints the GCX_* variables that point gcx at it",
    []
  )
))
