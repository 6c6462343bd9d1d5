/**
 * Bundles the `gcx` bin (`packages/cli/dist/bin.js`, compiled by `tsc -b`) into
 * `packages/cli/dist/gcx/`: `gcx.cjs`, the whole CLI as one CommonJS file in which each
 * command's handler (`src/run/`, see `Lazy.handler`) with the client, the poller, the sandbox or
 * the workflow is evaluated only when its command runs, and `bin.js`, which runs it with V8's
 * code cache (`src/launch.ts`, `CodeCache`). Node would otherwise resolve several hundred small
 * modules of effect and its dependencies at each start, and compile them all
 * (`pnpm bench --only startup`, bench/README.md row 7).
 *
 * The library modules of @gcx/cli stay unbundled in `dist/`, sharing the application's effect.
 * Run by `pnpm build`, after tsc.
 */
import * as Esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Url from "node:url"

const cli = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../packages/cli")

// Files of an earlier build (its chunks, say) would be packed too.
Fs.rmSync(Path.join(cli, "dist/gcx"), { recursive: true, force: true })

// The CLI as one CommonJS file: V8 caches the code of scripts, not of ES modules (`CodeCache`).
// Each command's handler (`Lazy.handler`) stays a module evaluated when its command runs: esbuild
// turns its dynamic import into a lazy initialiser.
await Esbuild.build({
  absWorkingDir: cli,
  entryPoints: ["dist/bin.js"],
  outfile: "dist/gcx/gcx.cjs",
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node22",
  minify: true,
  sourcemap: "linked",
  // The optional peers of telemetry are loaded from node_modules as they are (SQLite is Node's own
  // node:sqlite, and @effect/sql-pg is plain TypeScript: both bundle).
  external: ["@opentelemetry/*", "@effect/opentelemetry"],
  logLevel: "warning"
})

// The bin's entry: runs gcx.cjs with the code cache; node's built-ins only.
await Esbuild.build({
  absWorkingDir: cli,
  entryPoints: ["dist/launch.js"],
  outfile: "dist/gcx/bin.js",
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node22",
  logLevel: "warning"
})
