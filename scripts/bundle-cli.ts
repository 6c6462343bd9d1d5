/**
 * Bundles the `gcx` bin (`packages/cli/dist/bin.js`, compiled by `tsc -b`) into
 * `packages/cli/dist/gcx/`: the ES module of the start (with the chunks it shares with the
 * rest), plus chunks that load on demand: each command's handler (`src/run/`, see
 * `Lazy.handler`), undici, the sandbox, the workflow, OpenTelemetry. Node resolves several
 * hundred small modules of effect, @effect/cli and their dependencies at each start; the bundle
 * cuts `gcx --version` to about a third (`pnpm bench --only startup`, bench/README.md row 7).
 *
 * The library modules of @gcx/cli stay unbundled in `dist/`, sharing the application's effect.
 * Run by `pnpm build`, after tsc.
 */
import * as Esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Url from "node:url"

const cli = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../packages/cli")

// The chunks' names change with their content: the chunks of an earlier build would be packed too.
Fs.rmSync(Path.join(cli, "dist/gcx"), { recursive: true, force: true })

await Esbuild.build({
  absWorkingDir: cli,
  entryPoints: { bin: "dist/bin.js" },
  outdir: "dist/gcx",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  sourcemap: "linked",
  // Packages with native code, and the optional peers, are loaded from node_modules as they are.
  external: ["better-sqlite3", "pg-native", "@opentelemetry/*", "@effect/opentelemetry"],
  // CommonJS dependencies bundled into an ES module call `require` for Node's built-ins.
  banner: {
    js: "import { createRequire as __gcxRequire } from \"node:module\"; const require = __gcxRequire(import.meta.url);"
  },
  logLevel: "warning"
})
