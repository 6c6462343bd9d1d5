/**
 * CPU accounting: this process's CPU time (`process.cpuUsage`) and, on Linux,
 * another process's (from `/proc/<pid>/stat`), so that client and server are
 * measured apart.
 */
import * as fs from "node:fs"

/** CPU milliseconds (user + system) this process has used so far. */
export const selfMillis = (): number => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

const ticksPerSecond = 100

/** CPU milliseconds (user + system) a process has used so far, or `undefined` where `/proc` cannot tell. */
export const processMillis = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond
  } catch {
    return undefined
  }
}

/** What one measured run took: wall time and the CPU of this process and, when known, of the server. */
export interface Measured<A> {
  readonly value: A
  readonly wallMillis: number
  readonly clientCpuMillis: number
  readonly serverCpuMillis: number | undefined
}

/** Runs `task` and measures its wall time, this process's CPU and the server process's CPU. */
export const measure = async <A>(serverPid: number | undefined, task: () => Promise<A>): Promise<Measured<A>> => {
  const server = serverPid === undefined ? undefined : processMillis(serverPid)
  const cpu = selfMillis()
  const start = performance.now()
  const value = await task()
  const wallMillis = performance.now() - start
  const clientCpuMillis = selfMillis() - cpu
  const serverAfter = serverPid === undefined ? undefined : processMillis(serverPid)
  return {
    value,
    wallMillis,
    clientCpuMillis,
    serverCpuMillis: server === undefined || serverAfter === undefined ? undefined : serverAfter - server
  }
}
