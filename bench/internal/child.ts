/**
 * Bench rows that measure memory run their side in a child process of its own (`--expose-gc`) and
 * read the one `RESULT <json>` line it prints.
 */
import * as ChildProcess from "node:child_process"
import { rootDir } from "./paths.js"

/**
 * Runs `node --expose-gc --import tsx <script> ...args` from the repository's root and resolves with
 * the JSON of its `RESULT ` line; rejects, naming `label` and the end of its stderr, when it exits
 * without one.
 */
export const resultOf = <A>(
  label: string,
  script: string,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = process.env
): Promise<A> =>
  new Promise((resolve, reject) => {
    const child = ChildProcess.spawn(process.execPath, ["--expose-gc", "--import", "tsx", script, ...args], {
      cwd: rootDir,
      stdio: ["ignore", "pipe", "pipe"],
      env
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)))
    child.once("exit", (code) => {
      const line = stdout.split("\n").find((candidate) => candidate.startsWith("RESULT "))
      if (line === undefined) reject(new Error(`the ${label} child exited (${code}) without a result: ${stderr}`))
      else resolve(JSON.parse(line.slice("RESULT ".length)) as A)
    })
  })
