/**
 * `gcx sandbox [--port N] [fault flags]`: runs the sandbox (the simulated
 * partner service of @gcx/sandbox) until Ctrl+C, and prints its addresses,
 * the `GCX_*` variables that point gcx at it, and the scenario cards.
 * Its flags, those of `pnpm sandbox`, are in `commands/SandboxCommand`.
 */
import * as Faults from "@gcx/sandbox/Faults"
import * as Sandbox from "@gcx/sandbox/Sandbox"
import type * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type { ServeError } from "effect/http/HttpServerError"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { CliError, ExitCode } from "../ExitCode.js"

/** What `gcx sandbox` is given: its flags (`commands/SandboxCommand`). */
export interface Flags {
  readonly port: number
  readonly host: Option.Option<string>
  readonly allowedHost: ReadonlyArray<string>
  readonly stage: Option.Option<string>
  readonly timeScale: Option.Option<number>
  readonly tokenLifetime: Option.Option<number>
  readonly seed: Option.Option<string>
  readonly fault: ReadonlyArray<string>
  readonly latency: Option.Option<string>
  readonly maxTransactions: Option.Option<number>
  readonly maxDashboardStreams: Option.Option<number>
  readonly quiet: boolean
}

/** The sandbox options for the flags, or what is wrong with a fault rule. */
export const sandboxOptions = (flags: Flags): Result.Result<Sandbox.SandboxOptions, CliError> =>
  Result.map(
    Result.all(
      [...flags.fault, ...Option.toArray(Option.map(flags.latency, (ms) => `any:latency:ms=${ms}`))].map(
        Faults.parseRule
      )
    ),
    (faults): Sandbox.SandboxOptions => ({
      port: flags.port,
      host: Option.getOrUndefined(flags.host),
      allowedHosts: flags.allowedHost,
      stage: Option.getOrUndefined(flags.stage),
      timeScale: Option.getOrUndefined(flags.timeScale),
      tokenLifetimeSeconds: Option.getOrUndefined(flags.tokenLifetime),
      seed: Option.getOrUndefined(Option.map(flags.seed, (seed) => (Number.isNaN(Number(seed)) ? seed : Number(seed)))),
      faults,
      maxTransactions: Option.getOrUndefined(flags.maxTransactions),
      maxDashboardStreams: Option.getOrUndefined(flags.maxDashboardStreams),
      logLevel: flags.quiet ? "None" : "Info"
    })
  ).pipe(Result.mapError((message) => new CliError({ code: ExitCode.Usage, message })))

/** Runs a sandbox until interrupted, and prints its banner. */
export const run = (
  options: Sandbox.SandboxOptions
): Effect.Effect<never, ServeError | Sandbox.SandboxOptionsError> =>
  Effect.gen(function*() {
    yield* Console.log(Sandbox.banner(yield* Sandbox.make(options)))
    return yield* Effect.never
  }).pipe(Effect.scoped)

/** The `sandbox` command's handler: a sandbox with the flags' options and `GCX_SANDBOX_ADMIN_KEY`, until interrupted. */
export const handler = (
  flags: Flags
): Effect.Effect<never, CliError | Config.ConfigError | ServeError | Sandbox.SandboxOptionsError> =>
  Effect.gen(function*() {
    const options = yield* Effect.fromResult(sandboxOptions(flags))
    const adminKey = yield* Sandbox.adminKeyConfig
    return yield* run({ ...options, adminKey: Option.getOrUndefined(adminKey) })
  })
