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
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import type * as Command from "effect/cli/Command"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Stream from "effect/Stream"
import * as Terminal from "effect/Terminal"

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
 * A layer of `service` that forwards (`wrap`) to the one `load`'s layer
 * provides, built the first time it is used, once however many ask at once:
 * in the scope and the context of this layer (not of its first caller), so
 * that a scoped service (Node's terminal) lives as long as this layer, and an
 * optional service it reads (Node's file system reads a watch backend) is the
 * one this layer saw. A failed import is a defect.
 */
const layerAtFirstUse = <I, S, RIn>(
  service: Context.Key<I, S>,
  load: () => Promise<Layer.Layer<I, never, RIn>>,
  wrap: (node: Effect.Effect<S>) => S
): Layer.Layer<I, never, RIn> =>
  Layer.effect(
    service,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const context = yield* Effect.context<RIn>()
      const node = yield* Effect.cached(
        Effect.promise(load).pipe(
          Effect.flatMap((layer) => Layer.buildWithScope(layer, scope)),
          Effect.map(Context.get(service)),
          Effect.updateContext((_: Context.Context<never>) => context)
        )
      )
      return wrap(node)
    })
  )

/** A method of Node's file system that returns an effect, called on it once it is loaded. */
const forward = <K extends keyof FileSystem.FileSystem>(node: Effect.Effect<FileSystem.FileSystem>, method: K) =>
  ((...args: ReadonlyArray<unknown>) =>
    Effect.flatMap(
      node,
      (fs) => (fs[method] as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown, unknown>)(...args)
    )) as unknown as FileSystem.FileSystem[K]

/**
 * Node's file system, loaded at its first use: `@effect/platform-node`'s
 * imports `node:crypto` (for temporary names), about 8 ms of a start, and
 * `gcx --version` reads no file. What `FileSystem.make` derives (`exists`,
 * `stream`, ...) it derives as Node's does.
 */
const layerFileSystem = layerAtFirstUse(
  FileSystem.FileSystem,
  () => import("@effect/platform-node/NodeFileSystem").then((m) => m.layer),
  (node) =>
    FileSystem.make({
      access: forward(node, "access"),
      chmod: forward(node, "chmod"),
      chown: forward(node, "chown"),
      copy: forward(node, "copy"),
      copyFile: forward(node, "copyFile"),
      link: forward(node, "link"),
      lstat: forward(node, "lstat"),
      makeDirectory: forward(node, "makeDirectory"),
      makeTempDirectory: forward(node, "makeTempDirectory"),
      makeTempDirectoryScoped: forward(node, "makeTempDirectoryScoped"),
      makeTempFile: forward(node, "makeTempFile"),
      makeTempFileScoped: forward(node, "makeTempFileScoped"),
      open: forward(node, "open"),
      readDirectory: forward(node, "readDirectory"),
      readDirectoryEntries: forward(node, "readDirectoryEntries"),
      readFile: forward(node, "readFile"),
      readLink: forward(node, "readLink"),
      realPath: forward(node, "realPath"),
      remove: forward(node, "remove"),
      rename: forward(node, "rename"),
      stat: forward(node, "stat"),
      symlink: forward(node, "symlink"),
      truncate: forward(node, "truncate"),
      utimes: forward(node, "utimes"),
      writeFile: forward(node, "writeFile"),
      watch: (path, options) => Stream.unwrap(Effect.map(node, (fs) => fs.watch(path, options)))
    })
)

/**
 * Node's terminal, loaded at its first use: it reads `process.stdin` and
 * `node:readline` when it is made, and only prompts use it.
 */
const layerTerminal = layerAtFirstUse(
  Terminal.Terminal,
  () => import("@effect/platform-node/NodeTerminal").then((m) => m.layer),
  (node) =>
    Terminal.make({
      columns: Effect.flatMap(node, (terminal) => terminal.columns),
      rows: Effect.flatMap(node, (terminal) => terminal.rows),
      size: Effect.flatMap(node, (terminal) => terminal.size),
      readInput: Effect.flatMap(node, (terminal) => terminal.readInput),
      readLine: Effect.flatMap(node, (terminal) => terminal.readLine),
      display: (text) => Effect.flatMap(node, (terminal) => terminal.display(text))
    })
)

/**
 * Node's child process spawner, loaded at the first spawn: `effect/cli`'s
 * environment names a spawner, gcx's commands spawn nothing, and
 * `node:child_process` costs about 7 ms of a start.
 */
const layerSpawner = layerAtFirstUse(
  ChildProcessSpawner.ChildProcessSpawner,
  () => import("@effect/platform-node/NodeChildProcessSpawner").then((m) => m.layer),
  (node) => ChildProcessSpawner.make((command) => Effect.flatMap(node, (spawner) => spawner.spawn(command)))
)

/**
 * The platform's services for `gcx` on Node: `NodeServices.layer`'s, with
 * Node's file system, terminal and child process spawner each loaded at its
 * first use (a start loads none of them: `Startup.test.ts`).
 */
export const layerNodeServices: Layer.Layer<Command.Environment> = Layer.provideMerge(
  Layer.mergeAll(layerSpawner, layerTerminal),
  Layer.mergeAll(layerFileSystem, NodePath.layer, NodeStdio.layer)
)
