/**
 * Commands whose work is loaded when they run: `gcx` starts with the command
 * definitions only (flags and help, `commands/`), and a command's handler
 * (`run/`), with the client, the poller, the sandbox or the workflow it
 * needs, is imported when that command is the one that runs. `gcx --version`,
 * `--help` and a usage error load none of them.
 *
 * A handler module declares the input it takes; the command's flags must give
 * it (checked where the command is made), so that `run/` never imports
 * `commands/`.
 */
import * as Effect from "effect/Effect"

/** A module that holds a command's handler. */
export interface HandlerModule<Config, E, R> {
  readonly handler: (config: Config) => Effect.Effect<void, E, R>
}

/** The handler of a command, imported by `load` when the command runs (a failed import is a defect). */
export const handler = <Config, E, R>(
  load: () => Promise<HandlerModule<Config, E, R>>
) =>
(config: Config): Effect.Effect<void, E, R> => Effect.flatMap(Effect.promise(load), (module) => module.handler(config))
