/**
 * A throwaway PostgreSQL for the client-only checks of the install test, from the workflow
 * package's test helper.
 */
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { root } from "./Process.js"

/** A throwaway PostgreSQL, running until `stop`. */
export interface Postgres {
  readonly url: string
  readonly stop: () => Promise<void>
}

/**
 * A throwaway PostgreSQL server, started by the workflow package's test helper
 * (`packages/workflow/test/utils/with-postgres.ts`: initdb into a temporary folder, a free
 * loopback port, everything removed afterwards). The helper runs a child that prints the URL and
 * lives until its stdin closes: `stop` closes it, and the helper removes the server.
 */
export const startPostgres = (): Promise<Postgres> =>
  new Promise((resolve, reject) => {
    const holder = "process.stdout.write(process.env.GCX_DATABASE_URL + '\\n');" +
      "process.stdin.resume();process.stdin.on('end',()=>process.exit(0))"
    const child = ChildProcess.spawn(
      Path.join(root, "node_modules", ".bin", "tsx"),
      ["packages/workflow/test/utils/with-postgres.ts", process.execPath, "-e", holder],
      { cwd: root, env: process.env, stdio: ["pipe", "pipe", "pipe"] }
    )
    let stdout = ""
    let stderr = ""
    let resolved = false
    const exited = new Promise<void>((done) => child.on("close", () => done()))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", (error) => reject(error))
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      const url = stdout.split("\n")[0]!
      if (resolved || !stdout.includes("\n")) return
      resolved = true
      if (!url.startsWith("postgres")) return reject(new Error(`with-postgres printed ${url}\n${stderr}`))
      resolve({
        url,
        stop: () => {
          child.stdin.end()
          return exited
        }
      })
    })
    void exited.then(() => {
      if (!resolved) reject(new Error(`with-postgres ended before the server was up:\n${stderr.trim()}`))
    })
  })
