/**
 * Bundles the `gcx` bin (`packages/cli/dist/bin.js`, compiled by `tsc -b`) into
 * `packages/cli/dist/gcx/gcx.cjs`: the whole CLI as one CommonJS file in which each command's
 * handler (`src/run/`, see `Lazy.handler`) with the client, the poller, the sandbox or the
 * workflow is evaluated only when its command runs. Node would otherwise resolve several hundred
 * small modules of effect and its dependencies at each start, and compile them all
 * (`pnpm bench --only startup`, bench/NOTES.md row 7). The package's bin (`bin/gcx.mjs`) runs it
 * with Node's compile cache (`module.enableCompileCache`), so that V8 neither parses nor compiles
 * it again at the next start.
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

// The CLI as one file. Each command's handler (`Lazy.handler`) stays a module evaluated when its
// command runs: esbuild turns its dynamic import into a lazy initialiser.
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
  // Packages with native code, and the optional peers, are loaded from node_modules as they are.
  external: ["pg-native", "@opentelemetry/*", "@effect/opentelemetry"],
  logLevel: "warning"
})
