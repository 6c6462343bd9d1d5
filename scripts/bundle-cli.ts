/**
 * Bundles the `gcx` bin (`packages/cli/dist/bin.js`, compiled by `tsc -b`) into
 * `packages/cli/dist/gcx/`: an ES module entry, `gcx.mjs`, whose one chunk holds the command
 * definitions and what they import, and chunks that only a command's handler (`src/run/`, see
 * `Lazy.handler`) imports, with the client, the poller, the sandbox, the workflow or the gateway
 * (its Swagger page alone is 1.9 MB). A start reads, compiles and evaluates the entry and its chunk
 * only (about 0.41 MB of the 4 MB), and a command's chunks when it runs. Node would otherwise resolve several hundred
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

/** A module bundled with other contents than its file's: the files it applies to, and their contents. */
interface Rewrite {
  readonly filter: RegExp
  readonly load: (path: string) => Esbuild.OnLoadResult
}

/**
 * `@effect/platform-node/Undici` re-exports the CommonJS `undici` with `export *`, whose names an ES
 * module chunk cannot list: esbuild splits at `NodeHttpClient`'s `import("./Undici.js")`, and that
 * chunk would export `default` only (`Agent` undefined). It is bundled as the same re-export with
 * its names written out, read from the `undici` it resolves to.
 */
const undiciReExport: Rewrite = {
  filter: /[\\/]@effect[\\/]platform-node[\\/]dist[\\/]Undici\.js$/,
  load: (path) => {
    const undici = Module.createRequire(path)("undici") as Record<string, unknown>
    const names = Object.keys(undici).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name) && name !== "default")
    return {
      contents: `import undici from "undici"\nexport default undici\nexport const { ${names.join(", ")} } = undici\n`,
      loader: "js",
      resolveDir: Path.dirname(path)
    }
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
const lazySegmenter: Rewrite = {
  filter: /[\\/]effect[\\/]dist[\\/]cli[\\/]CliOutput\.js$/,
  load: (path) => {
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
  }
}

const rewrites: ReadonlyArray<Rewrite> = [undiciReExport, lazySegmenter]

/** A module as bundled: its rewrite's contents, else its file's. */
const sourceOf = (path: string): Esbuild.OnLoadResult =>
  rewrites.find((rewrite) => rewrite.filter.test(path))?.load(path) ??
    { contents: Fs.readFileSync(path, "utf8"), loader: "js", resolveDir: Path.dirname(path) }

/** Bundles the `rewrites`. */
const rewritten: Esbuild.Plugin = {
  name: "gcx-rewrites",
  setup(build) {
    for (const rewrite of rewrites) build.onLoad({ filter: rewrite.filter }, ({ path }) => rewrite.load(path))
  }
}

/** `text` as a literal part of a regular expression (esbuild's, Go's syntax). */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

/**
 * One chunk for all that the entry reaches: every module imported with `import()` also imports
 * the entry (unused, at its end). esbuild puts a module in the chunk of the set of entries and
 * `import()`ed modules that reach it, so the modules of a start were spread over 17 chunks by
 * which commands share them, and each file costs a start about 0.5 ms to resolve and load. Now a
 * start reads the entry and one chunk.
 *
 * - The `import()`ed modules are found by a first build (no output, the other plugins), so that
 *   the second does not depend on the order in which esbuild loads files; one in CommonJS fails
 *   the build (an `import` would make it an ES module).
 * - A command's chunks import the start's chunk, which has run by then: the entry's code runs
 *   once, at the start. So no chunk may be imported but by the start (a worker, say, would run
 *   the CLI), and the start must not wait at its top level for an `import()`.
 * - Applies to a build of one entry (gcx's); others are left as they are.
 */
const oneStartChunk: Esbuild.Plugin = {
  name: "one-start-chunk",
  async setup(build) {
    const { absWorkingDir, entryPoints, plugins = [] } = build.initialOptions
    const entries = entryPoints === undefined ? [] : Object.values(entryPoints)
    if (entries.length !== 1 || typeof entries[0] !== "string") return
    const directory = absWorkingDir ?? process.cwd()
    const entry = Path.resolve(directory, entries[0])
    const { metafile } = await Esbuild.build({
      ...build.initialOptions,
      plugins: plugins.filter((plugin) => plugin !== oneStartChunk),
      write: false,
      metafile: true,
      minify: false,
      sourcemap: false,
      logLevel: "silent"
    })
    const lazy = new Set(
      Object.values(metafile.inputs).flatMap((input) =>
        input.imports.filter((imported) => imported.kind === "dynamic-import" && imported.external !== true)
          .map((imported) => imported.path)
      )
    )
    const commonJs = [...lazy].filter((path) => metafile.inputs[path]?.format === "cjs")
    if (commonJs.length > 0) {
      throw new Error(`one-start-chunk: CommonJS modules imported with import(): ${commonJs.join(", ")}`)
    }
    if (lazy.size === 0) return
    const paths = [...lazy].map((path) => literally(Path.resolve(directory, path)))
    build.onLoad({ filter: new RegExp(`^(?:${paths.join("|")})$`) }, ({ path }) => {
      const source = sourceOf(path)
      // at the end (imports are hoisted), so that the module's own source map still lines up
      return { ...source, contents: `${source.contents}\nimport * as __gcxEntry from ${JSON.stringify(entry)};\n` }
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
    // `process.getBuiltinModule`: an ES module import of a builtin reads each of its exports
    js: "const require = process.getBuiltinModule(\"node:module\").createRequire(import.meta.url);"
  },
  // Packages with native code, and the optional peers, are loaded from node_modules as they are.
  external: ["pg-native", "@opentelemetry/*", "@effect/opentelemetry"],
  plugins: [oneStartChunk, rewritten],
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
