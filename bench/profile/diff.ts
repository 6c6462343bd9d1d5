/**
 * Compares two V8 CPU profiles per unit of work: self time in microseconds per
 * quote by area and by function, the second profile's minus the first's,
 * largest first. For a side that costs more than another in the same
 * deployment (row 9: `gateway-profile.ts` with and without `--in-process`),
 * what the extra time is spent on.
 *
 * ```sh
 * node --import tsx bench/profile/diff.ts <a.cpuprofile> <quotes in a> <b.cpuprofile> <quotes in b> [--top 30] [--json out.json]
 * ```
 */
import * as fs from "node:fs"
import { selfTimes } from "./summary.js"

/** One row: what b spends per quote beyond a, and each side's own figure. */
interface Row {
  readonly name: string
  readonly extraMicros: number
  readonly aMicros: number
  readonly bMicros: number
}

const perQuote = (
  a: ReadonlyMap<string, number>,
  aQuotes: number,
  b: ReadonlyMap<string, number>,
  bQuotes: number
): Array<Row> =>
  [...new Set([...a.keys(), ...b.keys()])].map((name) => {
    const aMicros = (a.get(name) ?? 0) / aQuotes
    const bMicros = (b.get(name) ?? 0) / bQuotes
    return { name, extraMicros: bMicros - aMicros, aMicros, bMicros }
  }).sort((x, y) => y.extraMicros - x.extraMicros)

const [aFile, aCount, bFile, bCount] = process.argv.slice(2)
const topIndex = process.argv.indexOf("--top")
const top = topIndex >= 0 ? Number(process.argv[topIndex + 1]) : 30
const jsonIndex = process.argv.indexOf("--json")
const a = selfTimes(aFile!)
const b = selfTimes(bFile!)
const [aQuotes, bQuotes] = [Number(aCount), Number(bCount)]
const round = (micros: number) => Math.round(micros * 10) / 10
const table = (rows: Array<Row>) =>
  rows.slice(0, top).map((row) => ({
    name: row.name,
    extraMicros: round(row.extraMicros),
    aMicros: round(row.aMicros),
    bMicros: round(row.bMicros)
  }))
const result = {
  a: { file: aFile, quotes: aQuotes, busyMicrosPerQuote: round(a.busyMicros / aQuotes) },
  b: { file: bFile, quotes: bQuotes, busyMicrosPerQuote: round(b.busyMicros / bQuotes) },
  areas: table(perQuote(a.byArea, aQuotes, b.byArea, bQuotes)),
  functions: table(perQuote(a.byFunction, aQuotes, b.byFunction, bQuotes))
}
if (jsonIndex >= 0) fs.writeFileSync(process.argv[jsonIndex + 1]!, JSON.stringify(result, null, 2) + "\n")
console.log(
  `busy µs per quote: a ${result.a.busyMicrosPerQuote}, b ${result.b.busyMicrosPerQuote} ` +
    `(b − a: ${round(result.b.busyMicrosPerQuote - result.a.busyMicrosPerQuote)})`
)
for (const [title, rows] of [["areas", result.areas], ["functions (self)", result.functions]] as const) {
  console.log(`${title}: b − a, a, b (µs per quote)`)
  for (const row of rows) {
    console.log(
      `  ${String(row.extraMicros).padStart(7)} ${String(row.aMicros).padStart(7)} ${
        String(row.bMicros).padStart(7)
      }  ${row.name}`
    )
  }
}
