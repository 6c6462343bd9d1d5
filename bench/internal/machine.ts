/** The machine a run came from, for the results file and the README. */
import * as ChildProcess from "node:child_process"
import * as os from "node:os"
import { rootDir } from "./paths.js"

/** What is recorded about the machine and the code. */
export interface Machine {
  readonly cpuModel: string
  readonly cores: number
  readonly totalMemoryBytes: number
  readonly platform: string
  readonly release: string
  readonly arch: string
  readonly node: string
  readonly commit: string | undefined
  /** The 1, 5 and 15 minute load averages when the run started: other work on the machine skews the figures. */
  readonly loadAverage: ReadonlyArray<number>
}

const commit = (): string | undefined => {
  try {
    return ChildProcess.execSync("git rev-parse --short HEAD", { cwd: rootDir, stdio: ["ignore", "pipe", "ignore"] })
      .toString().trim()
  } catch {
    return undefined
  }
}

/** Reads the machine's description. */
export const describe = (): Machine => {
  const cpus = os.cpus()
  return {
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    totalMemoryBytes: os.totalmem(),
    platform: os.platform(),
    release: os.release(),
    arch: os.arch(),
    node: process.version,
    commit: commit(),
    loadAverage: os.loadavg().map((load) => Math.round(load * 100) / 100)
  }
}

/** One line: `Intel(R) Xeon(R) ... @ 2.50GHz, 2 cores, 24 GiB, linux x64, Node v20.20.2, load 0.5`. */
export const oneLine = (machine: Machine): string =>
  `${machine.cpuModel}, ${machine.cores} cores, ${Math.round(machine.totalMemoryBytes / 2 ** 30)} GiB, ` +
  `${machine.platform} ${machine.arch}, Node ${machine.node}, load average ${machine.loadAverage[0]} at start`
