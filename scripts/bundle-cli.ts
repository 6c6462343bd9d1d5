/**
 * Bundles the `gcx` bin (`packages/cli/dist/bin.js`, compiled by `tsc -b`) into
 * `packages/cli/dist/gcx/`: an ES module entry, `gcx.mjs`, whose one chunk holds the command
 * definitions and what they import, and chunks that only a command's handler (`src/run/`, see
 * `Lazy.handler`) imports, with the client, the poller, the sandbox, the workflow or the gateway
 * (its Swagger page alone is 1.9 MB). A start reads, compiles and evaluates the entry and its chunk
 * only (about 0.42 MB of the 4 MB), and a command's chunks when it runs. Node would otherwise resolve several hundred
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
const bundleDirectory = "dist/gcx"

/** The bundle's entry, which `bin/gcx.mjs` imports (`#bin`). */
const entryName = "gcx"

/** `@effect/platform-node/Undici`: a re-export of the CommonJS `undici` with `export *`. */
const undiciModule = /[\\/]@effect[\\/]platform-node[\\/]dist[\\/]Undici\.js$/

/**
 * `@effect/platform-node/Undici` as bundled: the same re-export with undici's names written out,
 * read from the `undici` that `path` resolves to. An ES module chunk cannot list the names of a
 * CommonJS `export *`: esbuild splits at `NodeHttpClient`'s `import("./Undici.js")`, and that
 * chunk would export `default` only (`Agent` undefined).
 */
const undiciReExportSource = (path: string): Esbuild.OnLoadResult => {
  const undici = Module.createRequire(path)("undici") as Record<string, unknown>
  const names = Object.keys(undici).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name) && name !== "default")
  return {
    contents: `import undici from "undici"\nexport default undici\nexport const { ${names.join(", ")} } = undici\n`,
    loader: "js",
    resolveDir: Path.dirname(path)
  }
}

/** Bundles `@effect/platform-node/Undici` as `undiciReExportSource` writes it. */
const undiciReExport: Esbuild.Plugin = {
  name: "undici-re-export",
  setup(build) {
    build.onLoad({ filter: undiciModule }, ({ path }) => undiciReExportSource(path))
  }
}

/**
 * One chunk for all that the entry reaches: every module imported with `import()` also imports
 * the entry (unused). esbuild puts a module in the chunk of the set of entries and `import()`ed
 * modules that reach it, so the modules of a start were spread over 17 chunks by which commands
 * share them, and each file costs a start about 0.5 ms to resolve and load. Now a start reads the
 * entry and one chunk; a command's chunks import that chunk, which has run by then (the entry's
 * code runs once, at the start). Applies to a build of one entry; the first plugin, so that it
 * sees each `import()` before the others resolve it.
 */
const oneStartChunk: Esbuild.Plugin = {
  name: "one-start-chunk",
  setup(build) {
    const { absWorkingDir, entryPoints } = build.initialOptions
    const entries = entryPoints === undefined ? [] : Object.values(entryPoints)
    const entry = entries.length === 1 && typeof entries[0] === "string"
      ? Path.resolve(absWorkingDir ?? process.cwd(), entries[0])
      : undefined
    if (entry === undefined) return
    const imported = new Set<string>()
    build.onResolve({ filter: /.*/ }, async ({ kind, path, importer, resolveDir, pluginData }) => {
      if (kind !== "dynamic-import" || pluginData === oneStartChunk) return undefined
      const resolved = await build.resolve(path, { kind, importer, resolveDir, pluginData: oneStartChunk })
      if (resolved.errors.length === 0 && !resolved.external) imported.add(resolved.path)
      return resolved
    })
    build.onLoad({ filter: /\.[cm]?js$/ }, ({ path }) => {
      if (!imported.has(path)) return undefined
      const source = undiciModule.test(path) ?
        undiciReExportSource(path) :
        { contents: Fs.readFileSync(path, "utf8"), loader: "js" as const, resolveDir: Path.dirname(path) }
      // at the end (imports are hoisted), so that the module's own source map still lines up
      return { ...source, contents: `${source.contents}\nimport * as __gcxEntry from ${JSON.stringify(entry)};\n` }
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
  plugins: [oneStartChunk, undiciReExport, lazySegmenter],
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
