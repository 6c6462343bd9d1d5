import { describe, expect, it } from "@effect/vitest"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Url from "node:url"
import * as CodeCache from "../src/CodeCache.js"

const child = Url.fileURLToPath(new URL("fixtures/codeCacheChild.ts", import.meta.url))

/** A CommonJS bundle that uses what Node's loader gives a module, with enough code for V8 to cache. */
const bundleSource = (answer: string) =>
  [
    `const path = require("node:path")`,
    ...Array.from({ length: 200 }, (_, i) => `function f${i}(x) { return x + ${i} }`),
    `module.exports = { sum: f199(1) }`,
    `process.stdout.write(JSON.stringify({ answer: ${JSON.stringify(answer)}, file: path.basename(__filename), ` +
    `dir: path.basename(__dirname), sum: module.exports.sum, self: this === exports }))`
  ].join("\n")

const setup = (answer = "first") => {
  const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-code-cache-"))
  const bundle = Path.join(root, "app", "gcx.cjs")
  Fs.mkdirSync(Path.dirname(bundle))
  Fs.writeFileSync(bundle, bundleSource(answer))
  return { root, bundle, directory: Path.join(root, "cache", "gcx") }
}

const start = (bundle: string, directory: string) => {
  const result = ChildProcess.spawnSync(process.execPath, ["--import", "tsx", child, bundle, directory], {
    encoding: "utf8",
    timeout: 60_000
  })
  expect(result.status, result.stderr).toBe(0)
  return {
    output: JSON.parse(result.stdout) as Record<string, unknown>,
    cache: /cache: (\w+)/.exec(result.stderr)?.[1]
  }
}

const cacheFiles = (directory: string) =>
  Fs.readdirSync(directory).filter((name) => name.endsWith(".v8cache")).map((name) => Path.join(directory, name))

describe("CodeCache", () => {
  it("the first start writes the cache (private), the next ones use it; the bundle runs as Node's loader runs it", () => {
    const { bundle, directory } = setup()
    const first = start(bundle, directory)
    expect(first).toEqual({
      output: { answer: "first", file: "gcx.cjs", dir: "app", sum: 200, self: true },
      cache: "miss"
    })
    const [file] = cacheFiles(directory)
    expect(file).toBe(CodeCache.cacheFile(bundle, Fs.statSync(bundle), directory))
    expect(Fs.statSync(file!).mode & 0o777).toBe(0o600)
    expect(Fs.statSync(directory).mode & 0o777).toBe(0o700)
    const written = Fs.readFileSync(file!)
    expect(start(bundle, directory)).toEqual({ ...first, cache: "hit" })
    // a cache V8 accepts is not written again
    expect(Fs.readFileSync(file!).equals(written)).toBe(true)
    expect(cacheFiles(directory)).toHaveLength(1)
  })

  it("a damaged cache is refused by V8: the start compiles as without one, and writes the cache anew", () => {
    const { bundle, directory } = setup()
    start(bundle, directory)
    const [file] = cacheFiles(directory)
    const damaged = Buffer.alloc(Fs.statSync(file!).size, 7)
    Fs.writeFileSync(file!, damaged)
    expect(start(bundle, directory)).toEqual({
      output: { answer: "first", file: "gcx.cjs", dir: "app", sum: 200, self: true },
      cache: "rejected"
    })
    expect(Fs.readFileSync(file!).equals(damaged)).toBe(false)
    expect(start(bundle, directory).cache).toBe("hit")
  })

  it("another bundle (an upgrade) gets a cache of its own: never the code of the old one", () => {
    const { bundle, directory } = setup()
    start(bundle, directory)
    Fs.writeFileSync(bundle, bundleSource("second"))
    Fs.utimesSync(bundle, new Date(), new Date(Date.now() + 5_000))
    expect(start(bundle, directory)).toMatchObject({ output: { answer: "second" }, cache: "miss" })
    expect(cacheFiles(directory)).toHaveLength(2)
  })

  it("a cache folder that cannot be written costs the cache, never the command", () => {
    const { bundle, root } = setup()
    const blocked = Path.join(root, "not-a-folder")
    Fs.writeFileSync(blocked, "")
    expect(start(bundle, Path.join(blocked, "gcx"))).toMatchObject({ output: { answer: "first" }, cache: "miss" })
    expect(start(bundle, Path.join(blocked, "gcx")).cache).toBe("miss")
  })

  it("the folder: XDG_CACHE_HOME when absolute, else the user's ~/.cache", () => {
    expect(CodeCache.cacheDirectory({ XDG_CACHE_HOME: "/var/cache/me" })).toBe(Path.join("/var/cache/me", "gcx"))
    const fallback = process.platform === "win32" ? undefined : Path.join(Os.homedir(), ".cache", "gcx")
    if (fallback !== undefined) {
      expect(CodeCache.cacheDirectory({ XDG_CACHE_HOME: "relative/path" })).toBe(fallback)
      expect(CodeCache.cacheDirectory({})).toBe(fallback)
    }
  })
})
