/**
 * Runs the bundled CLI (one CommonJS file, `dist/gcx/gcx.cjs`) with V8's code
 * cache, which Node 20 offers for scripts (`vm.Script`'s `cachedData`) and not
 * for ES modules. With the cache, V8 neither parses nor compiles the bundle
 * at start: the installed `gcx` starts about a third faster
 * (`pnpm bench --only startup`).
 *
 * - The cache of a bundle lives in the user's cache folder (`cacheDirectory`),
 *   in a file named for the bundle (its path, size and modification time),
 *   Node's version and the architecture (`cacheFile`). The folder is made
 *   private to the user (0700), the file 0600.
 * - The first start writes it when the process exits, from the functions that
 *   start compiled; so do starts whose cache V8 refuses (another V8, a damaged
 *   file). It is written to a temporary file and renamed, so a concurrent start
 *   never reads half a cache.
 * - Nothing about the cache can fail a command: a folder that cannot be
 *   written means a start without cache, as before.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Module from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Vm from "node:vm"

/** How a start used the cache: read and accepted, absent, or refused by V8 (and written anew). */
export type Outcome = "hit" | "miss" | "rejected"

/** Cache files not used for this long are removed when a new one is written. */
const staleMillis = 30 * 24 * 60 * 60 * 1000

const prefix = "gcx-"
const suffix = ".v8cache"

/** The folder of the code cache: `$XDG_CACHE_HOME/gcx`, else `%LOCALAPPDATA%\gcx` on Windows, else `~/.cache/gcx`. */
export const cacheDirectory = (env: NodeJS.ProcessEnv = process.env): string => {
  if (env.XDG_CACHE_HOME !== undefined && Path.isAbsolute(env.XDG_CACHE_HOME)) {
    return Path.join(env.XDG_CACHE_HOME, "gcx")
  }
  if (process.platform === "win32" && env.LOCALAPPDATA !== undefined) return Path.join(env.LOCALAPPDATA, "gcx")
  return Path.join(Os.homedir(), ".cache", "gcx")
}

/** The cache file of `bundle` for this Node and architecture, in `directory`. */
export const cacheFile = (bundle: string, stat: Fs.Stats, directory: string): string => {
  const key = Crypto.createHash("sha256")
    .update([Path.resolve(bundle), stat.size, stat.mtimeMs, process.version, process.arch].join("\0"))
    .digest("hex")
    .slice(0, 24)
  return Path.join(directory, `${prefix}${key}${suffix}`)
}

const readCache = (file: string): Buffer | undefined => {
  try {
    return Fs.readFileSync(file)
  } catch {
    return undefined
  }
}

/** Writes `data` to `file` atomically, in a private folder, and removes stale caches beside it. */
const writeCache = (file: string, data: Buffer): void => {
  const directory = Path.dirname(file)
  Fs.mkdirSync(directory, { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.tmp`
  try {
    Fs.writeFileSync(temporary, data, { mode: 0o600 })
    Fs.renameSync(temporary, file)
  } finally {
    Fs.rmSync(temporary, { force: true })
  }
  const now = Date.now()
  for (const name of Fs.readdirSync(directory)) {
    if (!name.startsWith(prefix) || !name.endsWith(suffix)) continue
    const other = Path.join(directory, name)
    if (other !== file && now - Fs.statSync(other).mtimeMs > staleMillis) Fs.rmSync(other, { force: true })
  }
}

/** A CommonJS module's source as the function Node's loader makes of it (`Module.wrap`, which ES modules cannot reach). */
const wrap = (source: string): string => `(function (exports, require, module, __filename, __dirname) { ${source}\n});`

/**
 * Runs the CommonJS file `bundle` in this context, as Node's loader would
 * (`require`, `module`, `__filename`, `__dirname`), with V8's code cache from
 * `directory`; when there was none, or V8 refused it, writes one as the
 * process exits. Returns how the cache was used.
 */
export const run = (bundle: string, directory: string = cacheDirectory()): Outcome => {
  const source = Fs.readFileSync(bundle, "utf8")
  const file = cacheFile(bundle, Fs.statSync(bundle), directory)
  const cachedData = readCache(file)
  const script = new Vm.Script(wrap(source), { filename: bundle, cachedData })
  const outcome: Outcome = cachedData === undefined ? "miss" : script.cachedDataRejected === true ? "rejected" : "hit"
  if (outcome !== "hit") {
    process.once("exit", () => {
      try {
        writeCache(file, script.createCachedData())
      } catch {
        // no cache this time: the next start compiles, as without one
      }
    })
  }
  const module = { exports: {} }
  const wrapper = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: unknown,
    filename: string,
    dirname: string
  ) => void
  wrapper.call(module.exports, module.exports, Module.createRequire(bundle), module, bundle, Path.dirname(bundle))
  return outcome
}
