#!/usr/bin/env node
// The `gcx` bin of @gcx/cli: runs the compiled, bundled CLI (`dist/gcx/gcx.cjs`) on plain node.
// `#bin` is the package's own import (package.json "imports"): inside the repository, the
// `@gcx/source` condition with tsx loaded runs the TypeScript source instead (see docs/contributing.md).
//
// Node's compile cache keeps V8's code of the CLI between runs, so that a start neither parses nor
// compiles it again: in NODE_COMPILE_CACHE when set, else in the user's cache folder
// ($XDG_CACHE_HOME/gcx, else ~/.cache/gcx), private to the user. NODE_DISABLE_COMPILE_CACHE=1
// turns it off; a folder that cannot be written only costs the cache, never the command.
import * as Fs from "node:fs"
import * as Module from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"

const cacheDirectory = () => {
  const env = process.env
  if (env.NODE_COMPILE_CACHE) return env.NODE_COMPILE_CACHE
  const base = env.XDG_CACHE_HOME && Path.isAbsolute(env.XDG_CACHE_HOME)
    ? env.XDG_CACHE_HOME
    : process.platform === "win32" && env.LOCALAPPDATA
    ? env.LOCALAPPDATA
    : Path.join(Os.homedir(), ".cache")
  const directory = Path.join(base, "gcx")
  Fs.mkdirSync(directory, { recursive: true, mode: 0o700 })
  return directory
}

if (!process.env.NODE_DISABLE_COMPILE_CACHE) {
  try {
    Module.enableCompileCache?.(cacheDirectory())
  } catch {
    // no cache this time: the CLI compiles, as without one
  }
}

await import("#bin")
