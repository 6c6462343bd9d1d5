/**
 * CPU affinity for the bench's processes (Linux `taskset`): a client and the
 * server it measures against, each on a core of its own, as on two hosts.
 * On two shared cores, the kernel otherwise puts them on one core in some
 * runs and on two in others, and a run's throughput follows that placement
 * more than the code.
 */
import * as ChildProcess from "node:child_process"
import * as os from "node:os"

/** Whether processes can be pinned here: `taskset` is installed and there are at least 2 CPUs. */
export const available = (): boolean => {
  if (os.availableParallelism() < 2) return false
  try {
    ChildProcess.execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/**
 * The command and arguments that run `command` with `args` on CPU `cpu`
 * (through `taskset`, which then becomes the command: same pid, and every
 * thread it starts on that CPU), or as they are when `cpu` is undefined.
 */
export const onCpu = (
  cpu: number | undefined,
  command: string,
  args: ReadonlyArray<string>
): readonly [string, ReadonlyArray<string>] =>
  cpu === undefined ? [command, args] : ["taskset", ["-c", String(cpu), command, ...args]]
