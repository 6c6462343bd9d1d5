/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): self time by function and
 * by area (gcx's packages, effect's modules, undici, node internals, GC), as
 * shares of the profile's samples. Small enough to keep beside a goal that
 * fails.
 *
 * ```sh
 * node --import tsx bench/profile/summary.ts bench/tmp/CPU.*.cpuprofile [--top 40] [--json out.json]
 * ```
 */
import * as fs from "node:fs"
import * as url from "node:url"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}

interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** The area a frame's URL belongs to. */
export const areaOf = (url: string, name: string): string => {
  if (name === "(garbage collector)") return "gc"
  if (name === "(program)" || name === "(idle)") return name
  const gcx = /packages\/([a-z]+)\/(?:dist|src)\/(.+?)\.[jt]s$/.exec(url)
  if (gcx !== null) return `gcx/${gcx[1]}/${gcx[2]}`
  const effect = /node_modules\/effect\/dist\/(.+?)\.js$/.exec(url)
  if (effect !== null) return `effect/${effect[1]}`
  const platform = /@effect\/platform-node[^/]*\/dist\/(.+?)\.js$/.exec(url)
  if (platform !== null) return `platform-node/${platform[1]}`
  if (/node_modules\/undici\//.test(url)) return "undici (npm)"
  if (url.startsWith("node:internal/deps/undici")) return "undici (node)"
  if (url.startsWith("node:")) return "node"
  if (url === "") return "native"
  return "other"
}

/** Self time in microseconds by function (`name area:line`) and by area, and the profile's busy and idle time. */
export interface SelfTimes {
  readonly busyMicros: number
  readonly idleMicros: number
  readonly byFunction: ReadonlyMap<string, number>
  readonly byArea: ReadonlyMap<string, number>
}

/** The self times of a V8 CPU profile file. */
export const selfTimes = (file: string): SelfTimes => {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as Profile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfMicros = new Map<number, number>()
  profile.samples.forEach((id, index) => {
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0))
  })
  let total = 0
  let idle = 0
  const byFunction = new Map<string, number>()
  const byArea = new Map<string, number>()
  for (const [id, micros] of selfMicros) {
    const { functionName, lineNumber, url } = byId.get(id)!.callFrame
    if (functionName === "(idle)") {
      idle += micros
      continue
    }
    total += micros
    const area = areaOf(url, functionName)
    const key = `${functionName || "(anonymous)"} ${area}:${lineNumber + 1}`
    byFunction.set(key, (byFunction.get(key) ?? 0) + micros)
    byArea.set(area, (byArea.get(area) ?? 0) + micros)
  }
  return { busyMicros: total, idleMicros: idle, byFunction, byArea }
}

const main = () => {
  const file = process.argv[2]!
  const topIndex = process.argv.indexOf("--top")
  const top = topIndex >= 0 ? Number(process.argv[topIndex + 1]) : 40
  const jsonIndex = process.argv.indexOf("--json")
  const { busyMicros: total, byArea, byFunction, idleMicros: idle } = selfTimes(file)
  const share = (micros: number) => Math.round((micros / total) * 1000) / 10
  const sorted = (map: ReadonlyMap<string, number>) => [...map].sort((a, b) => b[1] - a[1])
  const summary = {
    file,
    busyMillis: Math.round(total / 1000),
    idleMillis: Math.round(idle / 1000),
    areas: sorted(byArea).slice(0, top).map(([area, micros]) => ({ area, percent: share(micros) })),
    functions: sorted(byFunction).slice(0, top).map(([name, micros]) => ({ name, percent: share(micros) }))
  }
  if (jsonIndex >= 0) fs.writeFileSync(process.argv[jsonIndex + 1]!, JSON.stringify(summary, null, 2) + "\n")
  console.log(`busy ${summary.busyMillis} ms, idle ${summary.idleMillis} ms`)
  console.log("areas:")
  for (const { area, percent } of summary.areas) console.log(`  ${percent.toFixed(1).padStart(5)} %  ${area}`)
  console.log("functions (self):")
  for (const { name, percent } of summary.functions) console.log(`  ${percent.toFixed(1).padStart(5)} %  ${name}`)
}

if (process.argv[1] === url.fileURLToPath(import.meta.url)) main()
