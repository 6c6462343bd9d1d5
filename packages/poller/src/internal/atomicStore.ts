import type * as PlatformError from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as KeyValueStore from "@effect/platform/KeyValueStore"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

const temporarySuffix = ".tmp"

/**
 * A `KeyValueStore` of files under `directory` whose writes are atomic: each
 * value is written to a temporary file, then renamed over the old one, so a
 * process killed mid-write leaves either the old value or the new one, never
 * a torn file.
 */
export const make = (
  directory: string
): Effect.Effect<KeyValueStore.KeyValueStore, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const fileOf = (key: string) => path.join(directory, encodeURIComponent(key))
    const ensureDirectory = fs.makeDirectory(directory, { recursive: true })
    const ignoreMissing = <B>(fallback: B) => <A, R>(effect: Effect.Effect<A, PlatformError.PlatformError, R>) =>
      Effect.catchIf(
        effect,
        (error) => error._tag === "SystemError" && error.reason === "NotFound",
        () => Effect.succeed(fallback)
      )
    return KeyValueStore.makeStringOnly({
      get: (key) => fs.readFileString(fileOf(key)).pipe(Effect.map(Option.some), ignoreMissing(Option.none())),
      set: (key, value) => {
        const temporary = `${fileOf(key)}.${process.pid}${temporarySuffix}`
        return ensureDirectory.pipe(
          Effect.zipRight(fs.writeFileString(temporary, value)),
          Effect.zipRight(fs.rename(temporary, fileOf(key)))
        )
      },
      remove: (key) => fs.remove(fileOf(key)).pipe(ignoreMissing(undefined)),
      clear: fs.remove(directory, { recursive: true }).pipe(ignoreMissing(undefined)),
      size: fs.readDirectory(directory).pipe(
        Effect.map((names) => names.filter((name) => !name.endsWith(temporarySuffix)).length),
        ignoreMissing(0)
      )
    })
  })
