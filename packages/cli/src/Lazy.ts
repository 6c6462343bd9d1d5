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
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import type * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Path from "effect/Path"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"

/** A module that holds a command's handler. */
export interface HandlerModule<Config, E, R> {
  readonly handler: (config: Config) => Effect.Effect<void, E, R>
}

/** The handler of a command, imported by `load` when the command runs (a failed import is a defect). */
export const handler = <Config, E, R>(
  load: () => Promise<HandlerModule<Config, E, R>>
) =>
(config: Config): Effect.Effect<void, E, R> => Effect.flatMap(Effect.promise(load), (module) => module.handler(config))

/**
 * The platform's services for `gcx` on Node: `NodeServices.layer`'s, with Node's
 * `ChildProcessSpawner` loaded at the first spawn. `effect/cli`'s environment
 * names a spawner, gcx's commands spawn nothing, and `node:child_process` costs
 * about 7 ms of every start.
 */
export const layerNodeServices: Layer.Layer<Command.Environment> = Layer.provideMerge(
  Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.gen(function*() {
      const services = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
      const node = yield* Effect.cached(
        Effect.promise(() => import("@effect/platform-node/NodeChildProcessSpawner")).pipe(
          Effect.flatMap((module) =>
            Effect.gen(function*() {
              return yield* ChildProcessSpawner.ChildProcessSpawner
            }).pipe(Effect.provide(module.layer))
          ),
          Effect.provideContext(services)
        )
      )
      return ChildProcessSpawner.make((command) => Effect.flatMap(node, (spawner) => spawner.spawn(command)))
    })
  ),
  Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeStdio.layer, NodeTerminal.layer)
)
