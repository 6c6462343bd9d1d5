/**
 * `Lazy.layerNodeServices`: the platform's services of `gcx`, whose file
 * system, terminal and child process spawner load Node's at their first use
 * (a start loads neither `node:crypto`, `node:readline` nor
 * `node:child_process`: `Startup.test.ts`).
 */
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Terminal from "effect/Terminal"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Lazy from "../src/Lazy.js"

describe("Lazy.layerNodeServices", () => {
  it.effect("spawns with Node's spawner, loaded at the first spawn, and again with the same", () =>
    Effect.gen(function*() {
      const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
      const run = (text: string) =>
        spawner.string(ChildProcess.make(process.execPath, ["-e", `process.stdout.write(${JSON.stringify(text)})`]))
      expect(yield* run("first")).toBe("first")
      expect(yield* run("second")).toBe("second")
      expect(yield* spawner.exitCode(ChildProcess.make(process.execPath, ["-e", "process.exit(3)"]))).toBe(3)
    }).pipe(Effect.provide(Lazy.layerNodeServices)))

  it.effect("a spawn that fails fails as Node's spawner fails it", () =>
    Effect.gen(function*() {
      const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
      const error = yield* Effect.flip(spawner.string(ChildProcess.make("/nonexistent/gcx-no-such-program", [])))
      expect(error._tag).toBe("PlatformError")
    }).pipe(Effect.provide(Lazy.layerNodeServices)))

  it.effect("the file system is Node's, loaded at its first use: files, what make derives, scoped temporaries, errors", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const directory = yield* fs.makeTempDirectoryScoped({ directory: Os.tmpdir(), prefix: "gcx-lazy-" })
      const file = Path.join(directory, "card.txt")
      yield* fs.writeFileString(file, "first line\nsecond line\n")
      expect(yield* fs.readFileString(file)).toBe("first line\nsecond line\n")
      expect(yield* fs.exists(file)).toBe(true)
      expect((yield* fs.stat(file)).type).toBe("File")
      const streamed = yield* fs.stream(file).pipe(Stream.decodeText(), Stream.mkString)
      expect(streamed).toBe("first line\nsecond line\n")
      expect(yield* fs.readDirectory(directory)).toEqual(["card.txt"])
      const missing = yield* Effect.flip(fs.readFile(Path.join(directory, "absent")))
      expect(missing._tag).toBe("PlatformError")
      expect(missing.reason._tag).toBe("NotFound")
      expect(yield* fs.exists(Path.join(directory, "absent"))).toBe(false)
      return directory
    }).pipe(
      Effect.scoped,
      // the scoped temporary folder is removed with its scope
      Effect.flatMap((directory) => Effect.flatMap(FileSystem.FileSystem, (fs) => fs.exists(directory))),
      Effect.map((exists) => expect(exists).toBe(false)),
      Effect.provide(Lazy.layerNodeServices)
    ))

  it.effect("the terminal is Node's, loaded at its first use", () =>
    Effect.gen(function*() {
      const size = Effect.flatMap(Terminal.Terminal, (terminal) => Effect.all([terminal.columns, terminal.rows]))
      const node = yield* size.pipe(Effect.provide(NodeTerminal.layer))
      expect(yield* size).toEqual(node)
    }).pipe(Effect.provide(Lazy.layerNodeServices)))

  it.effect("the terminal is built once, at its first use however many ask at once, and lives as long as the layer", () =>
    Effect.gen(function*() {
      // Node's terminal listens for the end of stdin from when it is made until its scope closes
      const listeners = () => process.stdin.listenerCount("end")
      const before = listeners()
      const scope = yield* Scope.make()
      const services = yield* Layer.buildWithScope(Lazy.layerNodeServices, scope)
      expect(listeners()).toBe(before)
      const terminal = Context.get(services, Terminal.Terminal)
      yield* Effect.all([terminal.columns, terminal.rows, terminal.columns], { concurrency: "unbounded" })
      expect(listeners()).toBe(before + 1)
      yield* terminal.columns
      expect(listeners()).toBe(before + 1)
      yield* Scope.close(scope, Exit.void)
      expect(listeners()).toBe(before)
    }))
})
