/**
 * What a tarball weighs and holds: the CLI's ships its bundle (`dist/gcx/gcx.mjs` and its chunks)
 * without the bundle's source maps, which the build writes beside it (about 18 MB, where the
 * whole tarball is about 1.3 MB without them).
 *
 *   tsx scripts/install/Tarball.ts <gcx-cli-x.y.z.tgz>   # the check alone, on a packed tarball
 */
import * as Fs from "node:fs"
import * as Url from "node:url"
import type { Verdict } from "./Checks.js"
import { run } from "./Process.js"

/** The most the CLI's tarball may weigh, in bytes: its bundle compresses to about 1.2 MB. */
export const maxCliBytes = 2 * 1024 * 1024

/** The files in a tarball. */
export const entries = (tarball: string): ReadonlyArray<string> => {
  const result = run("tar", ["-tzf", tarball])
  if (result.code !== 0) throw new Error(`cannot list ${tarball}: ${result.stderr}`)
  return result.stdout.split("\n").filter((line) => line !== "")
}

/** The CLI's tarball: its bundle, no source map of the bundle, at most `maxCliBytes`. */
export const cliVerdict = (tarball: string): Verdict => {
  const files = entries(tarball)
  const bytes = Fs.statSync(tarball).size
  const size = `${(bytes / 1024 / 1024).toFixed(2)} MB`
  const maps = files.filter((file) => file.startsWith("package/dist/gcx/") && file.endsWith(".map"))
  if (!files.includes("package/dist/gcx/gcx.mjs")) return { fail: "no dist/gcx/gcx.mjs" }
  if (maps.length > 0) return { fail: `${size}, with ${maps.join(", ")}` }
  if (bytes > maxCliBytes) return { fail: `${size}, over ${maxCliBytes / 1024 / 1024} MB` }
  return `${size}, ${files.length} files, no bundle source map`
}

if (process.argv[1] === Url.fileURLToPath(import.meta.url)) {
  const verdict = cliVerdict(process.argv[2]!)
  console.log(typeof verdict === "string" ? `PASS ${verdict}` : `FAIL ${verdict.fail}`)
  if (typeof verdict !== "string") process.exitCode = 1
}
