import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as KeyValueStore from "effect/persistence/KeyValueStore"
import type * as PlatformError from "effect/PlatformError"

const temporarySuffix = ".tmp"

/** The mode of a folder the store creates: the user's alone. */
const folderMode = 0o700

/** The mode of the files it writes: the user's alone (what they hold is not for other users). */
const fileMode = 0o600

/**
 * A `KeyValueStore` of files under `directory` whose writes are atomic: each
 * value is written to a temporary file, then renamed over the old one, so a
 * process killed mid-write leaves either the old value or the new one, never
 * a torn file. The folders it creates are 0700 and its files 0600, whatever
 * the umask.
 */
export const make = (
  directory: string
): Effect.Effect<KeyValueStore.KeyValueStore, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const fileOf = (key: string) => path.join(directory, encodeURIComponent(key))
    const ensureDirectory = fs.makeDirectory(directory, { recursive: true, mode: folderMode })
    /** A missing file or directory reads as `fallback`; any other failure is the store's. */
    const storeError = <B>(method: string, key: string | undefined, fallback?: { readonly value: B }) =>
    <A, R>(
      effect: Effect.Effect<A, PlatformError.PlatformError, R>
    ): Effect.Effect<A | B, KeyValueStore.KeyValueStoreError, R> =>
      Effect.catchTag(effect, "PlatformError", (cause) =>
        fallback !== undefined && cause.reason._tag === "NotFound"
          ? Effect.succeed(fallback.value)
          : Effect.fail(
            new KeyValueStore.KeyValueStoreError({
              method,
              ...(key !== undefined ? { key } : {}),
              message: `${method} failed: ${cause.message}`,
              cause
            })
          ))
    return KeyValueStore.makeStringOnly({
      get: (key) => fs.readFileString(fileOf(key)).pipe(storeError("get", key, { value: undefined })),
      set: (key, value) => {
        const temporary = `${fileOf(key)}.${process.pid}${temporarySuffix}`
        return ensureDirectory.pipe(
          Effect.andThen(fs.writeFileString(temporary, value, { mode: fileMode })),
          Effect.andThen(fs.rename(temporary, fileOf(key))),
          storeError("set", key)
        )
      },
      remove: (key) => fs.remove(fileOf(key)).pipe(storeError("remove", key, { value: undefined })),
      clear: fs.remove(directory, { recursive: true }).pipe(storeError("clear", undefined, { value: undefined })),
      size: fs.readDirectory(directory).pipe(
        Effect.map((names) => names.filter((name) => !name.endsWith(temporarySuffix)).length),
        storeError("size", undefined, { value: 0 })
      ),
      keys: fs.readDirectory(directory).pipe(
        Effect.map((names) =>
          names.filter((name) => !name.endsWith(temporarySuffix)).map((name) => decodeURIComponent(name))
        ),
        storeError("keys", undefined, { value: [] as ReadonlyArray<string> })
      )
    })
  })
