/**
 * `Lazy.layerNodeServices`: the platform's services of `gcx`, whose child
 * process spawner loads Node's at the first spawn (a start never loads
 * `node:child_process`: `Startup.test.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
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
})
