/**
 * The API reference, `docs/api/`, generated from the TSDoc of every package's public modules by
 * `@effect/docgen` (docs/api/README.md says why docgen):
 *
 *   pnpm docs:api            # regenerates docs/api/
 *   pnpm docs:api --check    # exits 1 when docs/api/ is not what the sources give (CI runs this)
 *
 * Per package, docgen (its `docgen.json`) parses `src/*.ts` (not `internal/`, the command
 * folders, `bin.ts`, `demo.ts`), fails on a public export without a doc comment, and type-checks
 * every `@example` against the sources (`tsconfig.docgen.json`). Its markdown, written for a
 * Jekyll site, is turned into plain pages that GitHub renders: `docs/api/<package>/<Module>.md`,
 * with an index, `docs/api/README.md`.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Url from "node:url"

const root = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "..")
const apiDirectory = Path.join(root, "docs", "api")

/** The packages, in dependency order, and what each holds (the index's lines). */
export const packages: ReadonlyArray<readonly [name: string, summary: string]> = [
  ["core", "wire schemas, domain types, tagged errors, quote events, money; no I/O"],
  ["http", "configuration, tokens, the client, retries, metrics and OpenTelemetry export"],
  ["poller", "Schedule-driven polling, the event bus, the journal"],
  ["workflow", "durable quotes on `effect/cluster` and `effect/workflow`: embedded (SQLite) or runners (PostgreSQL)"],
  ["gateway", "`gcx serve`: durable quotes over HTTP, API keys, server-sent events, signed webhooks"],
  ["sandbox", "the simulated partner service: server, scenarios, faults, admin API"],
  ["cli", "the pieces of the `gcx` command"]
]

const why = `Why \`@effect/docgen\`: it is the Effect team's generator, made for code written as gcx is
(namespaced modules of functions, \`Context.Service\`s, schemas), and it **type-checks every
\`@example\`** against the sources, so an example cannot drift from the API; it also fails on a
public export without a doc comment, which keeps the reference whole. TypeDoc (0.28, TypeScript
5.9) renders richer HTML but checks no example and wants a plugin for markdown. Its output is
checked in, as markdown that GitHub renders with no site to host: \`pnpm docs:api --check\`, a step
of \`.ci/run\`, regenerates it and fails when a page differs, so it cannot go stale.`

/** One page of docgen's markdown (Jekyll front matter, `## X overview`) as a plain GitHub page. */
const page = (pkg: string, module: string, markdown: string): string => {
  const specifier = module === "index" ? `@gcx/${pkg}` : `@gcx/${pkg}/${module}`
  const body = markdown
    .replace(/^[\s\S]*?\n---\n/, "") // the front matter
    .replace(/^## \S+ overview\n/m, `# \`${specifier}\`\n\n[API reference](../README.md) · [${pkg}](README.md)\n`)
    .replace(/^<h2 class="text-delta">Table of contents<\/h2>$/m, "**Contents**")
    .replace(/^Added in v\S*\n\n?/gm, "")
  return `${body.trim()}\n`
}

/** The first sentence of a module's overview, for the index. */
const summary = (markdown: string): string => {
  const overview = /^## \S+ overview\n\n([\s\S]*?)\n\n/m.exec(markdown)?.[1] ?? ""
  const text = overview.replace(/\s+/g, " ").trim()
  const end = text.search(/[.:](\s|$)/)
  return end < 0 ? text : text.slice(0, end)
}

/** Runs docgen in one package and returns its pages: file name under docs/api/ to content. */
const generate = (pkg: string): Map<string, string> => {
  const directory = Path.join(root, "packages", pkg)
  const out = Path.join(directory, ".docgen")
  Fs.rmSync(out, { recursive: true, force: true })
  const result = ChildProcess.spawnSync(Path.join(root, "node_modules", ".bin", "docgen"), [], {
    cwd: directory,
    encoding: "utf8",
    timeout: 300_000
  })
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ""}${result.stderr ?? ""}`)
    throw new Error(
      `docgen failed in packages/${pkg} (${result.error?.message ?? `exit ${result.status ?? result.signal}`})`
    )
  }
  const modules = Path.join(out, "modules")
  const pages = new Map<string, string>()
  const lines: Array<string> = []
  const files = Fs.readdirSync(modules).filter((name) => name.endsWith(".ts.md")).sort()
  // the package's entry point first, then its modules
  for (
    const file of [
      ...files.filter((name) => name === "index.ts.md"),
      ...files.filter((name) => name !== "index.ts.md")
    ]
  ) {
    const module = file.slice(0, -".ts.md".length)
    const markdown = Fs.readFileSync(Path.join(modules, file), "utf8")
    pages.set(`${pkg}/${module}.md`, page(pkg, module, markdown))
    const specifier = module === "index" ? `@gcx/${pkg}` : `@gcx/${pkg}/${module}`
    lines.push(`- [\`${specifier}\`](${module}.md): ${summary(markdown)}`)
  }
  pages.set(`${pkg}/README.md`, `# \`@gcx/${pkg}\`\n\n[API reference](../README.md)\n\n${lines.join("\n")}\n`)
  Fs.rmSync(out, { recursive: true, force: true })
  return pages
}

const all = new Map<string, string>([[
  "README.md",
  `# API reference\n\nGenerated from the TSDoc of every package's public modules by \`pnpm docs:api\`
(\`scripts/api-docs.ts\`); do not edit these pages by hand. The guides are one folder up:
[docs/](../).\n\n${
    packages.map(([name, text]) => `- [\`@gcx/${name}\`](${name}/README.md): ${text}`).join("\n")
  }\n\n${why}\n`
]])
for (const [pkg] of packages) for (const [file, content] of generate(pkg)) all.set(file, content)

const existing = (directory: string): Array<string> =>
  Fs.existsSync(directory)
    ? Fs.readdirSync(directory, { recursive: true, encoding: "utf8" })
      .filter((file) => Fs.statSync(Path.join(directory, file)).isFile())
    : []

if (process.argv.includes("--check")) {
  const stale = [
    ...[...all].filter(([file, content]) => {
      const path = Path.join(apiDirectory, file)
      return !Fs.existsSync(path) || Fs.readFileSync(path, "utf8") !== content
    }).map(([file]) => file),
    ...existing(apiDirectory).filter((file) => !all.has(file))
  ]
  if (stale.length > 0) {
    console.error(`docs/api/ is stale (run pnpm docs:api): ${stale.join(", ")}`)
    process.exit(1)
  }
  console.log(`docs/api/ is up to date (${all.size} pages)`)
} else {
  Fs.rmSync(apiDirectory, { recursive: true, force: true })
  for (const [file, content] of all) {
    Fs.mkdirSync(Path.dirname(Path.join(apiDirectory, file)), { recursive: true })
    Fs.writeFileSync(Path.join(apiDirectory, file), content)
  }
  console.log(`docs/api/: ${all.size} pages written`)
}
