/**
 * The embedded database's files, private to the user whatever the umask: its
 * folder 0700, the database and SQLite's `-wal` and `-shm` beside it 0600.
 * They hold requestIds, masked cards, transaction ids, values and sealed cards.
 *
 * The database file is created 0600 before SQLite opens it; SQLite then
 * creates `-wal` and `-shm` with the database's mode (it sets it with
 * `fchmod`, whatever the umask). Nothing changes the process's umask. A
 * looser file found there (left by an earlier gcx) is tightened; so is a
 * looser folder, when it is gcx's own (`.gcx`, or created here): another
 * folder may be shared (`/tmp`) and is left as it is.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The mode of the database's folder. */
export const folderMode = 0o700

/** The mode of the database and its `-wal` and `-shm`. */
export const fileMode = 0o600

/** The name of gcx's own folder (`.gcx/gcx.db`): one found looser is tightened. */
const ownFolder = ".gcx"

/** Sets `mode` on `path` when it grants anything to group or others; whether it did. Absent, nothing. */
const tighten = (path: string, mode: number): boolean => {
  const stat = Fs.statSync(path, { throwIfNoEntry: false })
  if (stat === undefined || (stat.mode & 0o077) === 0) return false
  Fs.chmodSync(path, mode)
  return true
}

/**
 * Prepares the files of the database `filename` before SQLite opens it:
 * creates its folder (0700) and the database (0600) when missing, and
 * tightens what is looser. Returns what it tightened, for a notice: each
 * path with its new mode (`/srv/gcx.db to 0600`).
 */
export const prepare = (filename: string): ReadonlyArray<string> => {
  const resolved = Path.resolve(filename)
  const folder = Path.dirname(resolved)
  const created = Fs.mkdirSync(folder, { recursive: true, mode: folderMode }) !== undefined
  const tightened: Array<string> = []
  if ((created || Path.basename(folder) === ownFolder) && tighten(folder, folderMode)) {
    tightened.push(`${folder} to 0700`)
  }
  Fs.closeSync(Fs.openSync(resolved, "a", fileMode))
  for (const path of [resolved, `${resolved}-wal`, `${resolved}-shm`]) {
    if (tighten(path, fileMode)) tightened.push(`${path} to 0600`)
  }
  return tightened
}
