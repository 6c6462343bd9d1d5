/** Where things are: the repository root (the cwd of every child process) and the bench directory. */
import * as path from "node:path"
import * as url from "node:url"

/** The bench directory. */
export const benchDir = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), "..")

/** The repository root. */
export const rootDir = path.resolve(benchDir, "..")

/** The results directory (gitignored except `.gitkeep`). */
export const resultsDir = path.join(benchDir, "results")

/** A path inside the bench directory. */
export const inBench = (...segments: Array<string>): string => path.join(benchDir, ...segments)
