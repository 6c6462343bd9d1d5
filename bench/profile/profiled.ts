/**
 * V8's CPU profiler around one stretch of this process's work, for the
 * profiling tools of this folder (`durable-profile.ts`, `gateway-profile.ts`):
 * the profile is written for `summary.ts` and `diff.ts`.
 */
import * as fs from "node:fs"
import * as Inspector from "node:inspector/promises"
import * as path from "node:path"
import * as Cpu from "../internal/cpu.js"

/** Runs `run` with the profiler on: its result and the CPU ms this process spent, the profile written to `out`. */
export const profiled = async <A>(
  out: string,
  run: () => Promise<A>
): Promise<{ readonly result: A; readonly cpuMillis: number }> => {
  const session = new Inspector.Session()
  session.connect()
  try {
    await session.post("Profiler.enable")
    await session.post("Profiler.start")
    const before = Cpu.selfMillis()
    const result = await run()
    const cpuMillis = Cpu.selfMillis() - before
    const { profile } = await session.post("Profiler.stop")
    fs.mkdirSync(path.dirname(out), { recursive: true })
    fs.writeFileSync(out, JSON.stringify(profile))
    return { result, cpuMillis }
  } finally {
    session.disconnect()
  }
}
