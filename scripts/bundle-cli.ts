/**
 * Bundles the `gcx` bin (`packages/cli/dist/bin.js`, compiled by `tsc -b`) into
 * `packages/cli/dist/gcx/`: an ES module entry, `gcx.mjs`, with the command definitions and what
 * they import, and chunks that only a command's handler (`src/run/`, see `Lazy.handler`) imports,
 * with the client, the poller, the sandbox, the workflow or the gateway (its Swagger page alone is
 * 1.9 MB). A start reads, compiles and evaluates the entry and its chunks only (about 0.45 MB of
 * the 4 MB), and a command's chunks when it runs. Node would otherwise resolve several hundred
 * small modules of effect and its dependencies at each start, and compile them all
 * (`pnpm bench --only startup`, bench/NOTES.md row 7). The package's bin (`bin/gcx.mjs`) runs it
 * with Node's compile cache (`module.enableCompileCache`), so that V8 neither parses nor compiles
 * it again at the next start.
 *
 * The output is ES modules because esbuild splits chunks for that format only: a CommonJS bundle
 * is one file, which each start reads and decodes whole (and which the ES module loader scans for
 * its exports). The CommonJS packages inside (pg, undici's parts) call `require`, so every chunk
 * starts with one made by `module.createRequire`.
 *
 * The library modules of @gcx/cli stay unbundled in `dist/`, sharing the application's effect.
 * Run by `pnpm build`, after tsc.
 *
 * The chunks' source maps (`dist/gcx/*.map`, about 18 MB in all) are written beside them and
 * linked, so that `node --enable-source-maps` maps a stack trace of a build here to the sources;
 * the package's `files` leave them out of the tarball (`pnpm test:install` checks), and an
 * installed bundle, whose maps are absent, runs and reports as it would without the link.
 */
import * as Esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Module from "node:module"
import * as Path from "node:path"
import * as Url from "node:url"

/** The folder of the bundle, in the CLI's package. */
export const bundleDirectory = "dist/gcx"

/** The bundle's entry, which `bin/gcx.mjs` imports (`#bin`). */
export const entryName = "gcx"

/**
 * `@effect/platform-node/Undici` re-exports the CommonJS `undici` with `export *`, whose names an ES
 * module chunk cannot list: esbuild splits at `NodeHttpClient`'s `import("./Undici.js")`, and that
 * chunk would export `default` only (`Agent` undefined). This module is bundled instead as the
 * same re-export with its names written out, read from the `undici` it resolves to.
 */
const undiciReExport: Esbuild.Plugin = {
  name: "undici-re-export",
  setup(build) {
    build.onLoad({ filter: /[\\/]@effect[\\/]platform-node[\\/]dist[\\/]Undici\.js$/ }, ({ path }) => {
      const undici = Module.createRequire(path)("undici") as Record<string, unknown>
      const names = Object.keys(undici).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name) && name !== "default")
      return {
        contents: `import undici from "undici"\nexport default undici\nexport const { ${names.join(", ")} } = undici\n`,
        loader: "js",
        resolveDir: Path.dirname(path)
      }
    })
  }
}

/** The grapheme segmenter of `effect/cli`'s `CliOutput`, as effect 4.1 creates it when the module is evaluated. */
const eagerSegmenter =
  /const graphemeSegmenter = \/\*#__PURE__\*\/new Intl\.Segmenter\(undefined, \{\s*granularity: "grapheme"\s*\}\);/

/**
 * `effect/cli`'s `CliOutput` creates an `Intl.Segmenter` when it is evaluated, which loads ICU's
 * break rules: about 15 ms of every start, where only help and tables measure text. Bundled, it
 * is created when text is first measured (its one use is `graphemeSegmenter.segment`). When an
 * effect release changes that line, the build warns and bundles the module as it is.
 */
const lazySegmenter: Esbuild.Plugin = {
  name: "lazy-cli-segmenter",
  setup(build) {
    build.onLoad({ filter: /[\\/]effect[\\/]dist[\\/]cli[\\/]CliOutput\.js$/ }, ({ path }) => {
      const source = Fs.readFileSync(path, "utf8")
      if (!eagerSegmenter.test(source)) {
        return {
          contents: source,
          loader: "js",
          warnings: [{
            text: "effect/cli's CliOutput changed: its segmenter is bundled as it is (scripts/bundle-cli.ts)"
          }]
        }
      }
      return {
        contents: source.replace(
          eagerSegmenter,
          "let graphemeSegmenterValue;const graphemeSegmenter = { segment: (text) => " +
            "(graphemeSegmenterValue ??= new Intl.Segmenter(undefined, { granularity: \"grapheme\" })).segment(text) };"
        ),
        loader: "js"
      }
    })
  }
}

/**
 * esbuild's options for a CLI bundled as gcx's is: `entry` (a compiled ES module) into `outdir`,
 * split into chunks at each dynamic `import()`. The bench's start-up floor (row 7) is built with
 * the same options.
 */
export const options = (entry: Record<string, string>, outdir: string): Esbuild.BuildOptions => ({
  entryPoints: entry,
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  outExtension: { ".js": ".mjs" },
  chunkNames: "chunks/[name]-[hash]",
  platform: "node",
  target: "node22",
  minify: true,
  sourcemap: "linked",
  banner: {
    js: "import { createRequire as __gcxCreateRequire } from \"node:module\";" +
      "const require = __gcxCreateRequire(import.meta.url);"
  },
  // Packages with native code, and the optional peers, are loaded from node_modules as they are.
  external: ["pg-native", "@opentelemetry/*", "@effect/opentelemetry"],
  plugins: [undiciReExport, lazySegmenter],
  logLevel: "warning"
})

if (process.argv[1] === Url.fileURLToPath(import.meta.url)) {
  const cli = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../packages/cli")
  // Files of an earlier build (its chunks, say) would be packed too.
  Fs.rmSync(Path.join(cli, bundleDirectory), { recursive: true, force: true })
  await Esbuild.build({
    ...options({ [entryName]: "dist/bin.js" }, bundleDirectory),
    absWorkingDir: cli
  })
}
