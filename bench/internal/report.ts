/**
 * What a row reports, the goals it is judged against, the markdown table and
 * the results file. Keys are stable across runs, so that files compare.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { Machine } from "./machine.js"
import { resultsDir } from "./paths.js"

/** A goal: a figure, how it must compare with a target, and whether it did. */
export interface Goal {
  /** A stable id, `<row>.<figure>`. */
  readonly id: string
  readonly description: string
  readonly comparison: ">=" | "<=" | "=="
  readonly target: number
  readonly actual: number
  readonly pass: boolean
}

/** Judges a figure against a target. */
export const goal = (
  id: string,
  description: string,
  comparison: Goal["comparison"],
  target: number,
  actual: number
): Goal => ({
  id,
  description,
  comparison,
  target,
  actual,
  pass: comparison === ">=" ? actual >= target : comparison === "<=" ? actual <= target : actual === target
})

/** One line of the markdown table. */
export interface Line {
  readonly measure: string
  readonly gcx: string
  readonly baseline: string
  readonly ratio: string
  /** The goal this line reports against, if any (its id). */
  readonly goal?: string | undefined
}

/** What a row hands back. */
export interface RowResult {
  /** The row's number (1 to 8). */
  readonly number: number
  readonly id: string
  readonly title: string
  /** What the baseline is, in a few words. */
  readonly baseline: string
  /** The settings of the run (counts, concurrency, schedules). */
  readonly params: Readonly<Record<string, unknown>>
  /** Every raw figure of both sides. */
  readonly figures: Readonly<Record<string, unknown>>
  readonly lines: ReadonlyArray<Line>
  readonly goals: ReadonlyArray<Goal>
  readonly notes: ReadonlyArray<string>
  readonly seconds: number
}

/** Formats a number with thousands separators and a fixed number of decimals. */
export const fmt = (value: number | undefined, decimals = 0): string =>
  value === undefined || Number.isNaN(value)
    ? "n/a"
    : value.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals })

const describeGoal = (goal: Goal): string =>
  `${goal.comparison === "==" ? "=" : goal.comparison === ">=" ? "≥" : "≤"} ${
    fmt(goal.target, goal.target % 1 === 0 ? 0 : 2)
  }`

/** The markdown table of every row. */
export const table = (rows: ReadonlyArray<RowResult>): string => {
  const header = ["#", "row", "measure", "gcx", "baseline", "gcx / baseline", "goal", "result"]
  const lines: Array<ReadonlyArray<string>> = []
  rows.forEach((row) => {
    for (const line of row.lines) {
      const judged = line.goal === undefined ? undefined : row.goals.find((goal) => goal.id === line.goal)
      lines.push([
        String(row.number),
        row.title,
        line.measure,
        line.gcx,
        line.baseline,
        line.ratio,
        judged === undefined ? "" : describeGoal(judged),
        judged === undefined ? "" : judged.pass ? "pass" : "**FAIL**"
      ])
    }
  })
  const render = (cells: ReadonlyArray<string>) => `| ${cells.join(" | ")} |`
  return [render(header), render(header.map(() => "---")), ...lines.map(render)].join("\n")
}

/** The whole results file. */
export interface Results {
  readonly version: 1
  readonly mode: "full" | "quick"
  readonly date: string
  readonly seconds: number
  readonly machine: Machine
  /** The 1, 5 and 15 minute load averages when the run ended. */
  readonly loadAverageAtEnd: ReadonlyArray<number>
  readonly command: string
  readonly goalsEnforced: boolean
  readonly rows: Readonly<Record<string, Omit<RowResult, "lines">>>
  readonly goals: ReadonlyArray<Goal & { readonly row: string }>
  readonly table: string
}

/** Writes the results to `bench/results/<name>`. */
export const write = (results: Results, name = "latest.json"): string => {
  fs.mkdirSync(resultsDir, { recursive: true })
  const file = path.join(resultsDir, name)
  fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  return file
}

/** What every row is given. */
export interface RowContext {
  /** Small counts, goals not enforced. */
  readonly quick: boolean
  /** Prints a progress line. */
  readonly log: (message: string) => void
}
