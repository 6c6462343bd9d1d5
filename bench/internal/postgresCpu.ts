/**
 * The CPU of a PostgreSQL server started by the tests' helper
 * (`packages/workflow/test/utils/postgres.ts`): its postmaster, found by the
 * `-c port=<port>` it was started with, plus its live children (the
 * backends, the writers) and the children it has reaped. Linux only
 * (`/proc`); `undefined` elsewhere, or for an external server
 * (`GCX_TEST_DATABASE_URL`) this machine cannot see.
 */
import * as fs from "node:fs"

const ticksPerSecond = 100

interface Stat {
  readonly pid: number
  readonly ppid: number
  /** utime + stime, in ticks. */
  readonly own: number
  /** cutime + cstime: the children it has waited for, in ticks. */
  readonly reaped: number
}

const stat = (pid: string): Stat | undefined => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return {
      pid: Number(pid),
      ppid: Number(fields[1]),
      own: Number(fields[11]) + Number(fields[12]),
      reaped: Number(fields[13]) + Number(fields[14])
    }
  } catch {
    return undefined
  }
}

/** The pid of the postmaster listening on `port`, if this machine runs it. */
export const postmaster = (port: number): number | undefined => {
  if (!fs.existsSync("/proc")) return undefined
  for (const pid of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
      if (
        args.some((arg) => /(^|\/)postgres$/.test(arg)) &&
        args.some((arg) => new RegExp(`(^|\\s)port=${port}$`).test(arg))
      ) {
        return Number(pid)
      }
    } catch {
      // the process ended meanwhile
    }
  }
  return undefined
}

/** CPU milliseconds the server has used so far: the postmaster, its live children and those it has reaped. */
export const serverMillis = (postmasterPid: number): number | undefined => {
  const main = stat(String(postmasterPid))
  if (main === undefined) return undefined
  let ticks = main.own + main.reaped
  for (const pid of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === postmasterPid) continue
    const child = stat(pid)
    if (child?.ppid === postmasterPid) ticks += child.own
  }
  return (ticks * 1000) / ticksPerSecond
}
