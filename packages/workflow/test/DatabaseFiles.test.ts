/**
 * The embedded database's files are private to the user whatever the umask:
 * a child process under `umask 022` opens it (`fixtures/umask-child.ts`) and
 * reports the modes while it is open.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Url from "node:url"
import { tempDirectory } from "./fixtures.js"

const root = Path.resolve(Path.dirname(Url.fileURLToPath(import.meta.url)), "../../..")
const child = Path.join(root, "packages/workflow/test/fixtures/umask-child.ts")

interface Modes {
  readonly folder: number | null
  readonly database: number | null
  readonly wal: number | null
  readonly shm: number | null
}

/** Runs the child on `filename` (killed after 30 s): the modes it saw, and its stderr. */
const open = (filename: string) =>
  Effect.callback<{ readonly modes: Modes; readonly stderr: string }, Error>((resume) => {
    const proc = ChildProcess.spawn(process.execPath, ["--import", "tsx", child, filename], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    proc.stdout.on("data", (chunk) => (stdout += chunk))
    proc.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000)
    proc.on("close", (code) => {
      clearTimeout(timer)
      const line = stdout.split("\n").find((line) => line.startsWith("{"))
      resume(
        code === 0 && line !== undefined
          ? Effect.succeed({ modes: JSON.parse(line) as Modes, stderr })
          : Effect.fail(new Error(`the child ended with ${code}: ${stderr}`))
      )
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      proc.kill("SIGKILL")
    })
  })

const notice = /tightened/g

describe("the embedded database's files", () => {
  it.live(
    "under umask 022: the folder is created 0700, the database, -wal and -shm are 0600",
    () =>
      Effect.gen(function*() {
        const filename = Path.join(yield* tempDirectory, ".gcx", "gcx.db")
        const first = yield* open(filename)
        expect(first.modes).toMatchObject({ folder: 0o700, database: 0o600, wal: 0o600 })
        expect([null, 0o600]).toContain(first.modes.shm)
        expect(first.stderr.match(notice)).toBeNull()
        // opened again, the -shm is there too: 0600 as well
        const second = yield* open(filename)
        expect(second.modes).toEqual({ folder: 0o700, database: 0o600, wal: 0o600, shm: 0o600 })
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("an existing database looser than that is tightened, and said once", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const filename = Path.join(directory, ".gcx", "gcx.db")
      yield* open(filename)
      // as a gcx of before left it under umask 022, -wal and -shm of a killed process included
      Fs.chmodSync(Path.dirname(filename), 0o755)
      Fs.chmodSync(filename, 0o644)
      for (const suffix of ["-wal", "-shm"]) Fs.writeFileSync(`${filename}${suffix}`, "", { mode: 0o644 })
      Fs.chmodSync(`${filename}-wal`, 0o644)
      Fs.chmodSync(`${filename}-shm`, 0o644)

      const tightened = yield* open(filename)
      expect(tightened.modes).toEqual({ folder: 0o700, database: 0o600, wal: 0o600, shm: 0o600 })
      expect(tightened.stderr.match(notice)).toHaveLength(1)
      expect(tightened.stderr).toContain(`${Path.dirname(filename)} to 0700, ${filename} to 0600`)
      const again = yield* open(filename)
      expect(again.stderr.match(notice)).toBeNull()
    }).pipe(Effect.scoped), 60_000)

  it.live(
    "a folder that is not gcx's own (another name) is left as it is; the files are 0600",
    () =>
      Effect.gen(function*() {
        const directory = yield* tempDirectory
        const shared = Path.join(directory, "shared")
        Fs.mkdirSync(shared, { mode: 0o755 })
        Fs.chmodSync(shared, 0o755)
        const { modes } = yield* open(Path.join(shared, "quotes.db"))
        expect(modes).toMatchObject({ folder: 0o755, database: 0o600, wal: 0o600 })
        // a looser file there is tightened, and the notice names it alone, never the folder it left
        Fs.chmodSync(Path.join(shared, "quotes.db"), 0o644)
        const { stderr } = yield* open(Path.join(shared, "quotes.db"))
        expect(stderr).toContain(`tightened ${Path.join(shared, "quotes.db")} to 0600`)
        expect(stderr).not.toContain("0700")
      }).pipe(Effect.scoped),
    60_000
  )
})
