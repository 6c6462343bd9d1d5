#!/usr/bin/env node
// The `gcx` bin of @gcx/cli: runs the compiled, bundled CLI (`dist/gcx/gcx.mjs`) on plain node.
// `#bin` is the package's own import (package.json "imports"): inside the repository, the
// `@gcx/source` condition with tsx loaded runs the TypeScript source instead (see docs/contributing.md).
//
// Node's compile cache keeps V8's code of the CLI between runs, so that a start neither parses nor
// compiles it again: in NODE_COMPILE_CACHE when set, else in the user's cache folder
// ($XDG_CACHE_HOME/gcx, else ~/.cache/gcx), private to the user. NODE_DISABLE_COMPILE_CACHE=1
// turns it off; a folder that cannot be written only costs the cache, never the command.

// gcx needs Node 22.19 or newer (the packages' engines): on an older one, say so, not "a bug"
const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `error: gcx needs Node 22.19 or newer (Node 24 recommended); this is Node ${process.versions.node}\n`
  )
  process.exit(2)
}
// Node's modules are taken as their CommonJS objects (`process.getBuiltinModule`, Node 22.3 and later):
// an ES module import of `node:fs` reads each of its exports, and its lazy `promises` loads
// `fs/promises`, `readline` and more, about 3 ms of every start (bench row 7).
const Fs = process.getBuiltinModule("node:fs")
const Module = process.getBuiltinModule("node:module")
const Os = process.getBuiltinModule("node:os")
const Path = process.getBuiltinModule("node:path")

// `gcx batch` allocates at a steady rate for as long as its file lasts, and V8 sizes its young
// generation to that rate (64 MB semi-spaces on a large machine): most of a long batch's peak RSS is
// garbage (bench row 8: 328 MB for 100,000 rows, the live heap under 40 MB). Semi-spaces of 8 MB keep
// the peak near 210 MB at the same CPU. That is a process option, which a running process cannot
// change, so the bin starts again with it: `process.execve` keeps the process id, so signals, exit
// codes and a parent's kill reach the batch itself. Only where Node has `process.execve` (22.15 and
// later, not Windows), and never when the option is given already (node's flags or NODE_OPTIONS).
const youngGeneration = "--max-semi-space-size"
if (
  process.argv.slice(2).includes("batch") &&
  typeof process.execve === "function" &&
  ![...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((flag) => flag.includes(youngGeneration))
) {
  process.execve(
    process.execPath,
    [process.execPath, `${youngGeneration}=8`, ...process.execArgv, ...process.argv.slice(1)],
    process.env
  )
}

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
