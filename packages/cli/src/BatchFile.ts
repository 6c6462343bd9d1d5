/**
 * The input of `gcx batch`: a CSV file with the header
 * `cardNumber,pinNumber,productLineId` (in any order; other columns are
 * ignored; fields may be double-quoted), or JSON lines, one object with those
 * three fields per line. The format is told by the first non-blank character:
 * `{` for JSON lines, anything else for CSV. Blank lines are skipped.
 *
 * A problem with the file names its line, never its content. The card number
 * and PIN are `Redacted` from the moment they are read; each card is
 * validated (`Card.validate`) when it is submitted, so one bad card is one
 * failed card, not a failed batch.
 */
import type * as Card from "@gcx/core/Card"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import { CliError, ExitCode } from "./ExitCode.js"

/** One card of a batch file, with the line it was read from (1-based). */
export interface Row {
  readonly line: number
  readonly card: Card.CardInput & {
    readonly cardNumber: Redacted.Redacted<string>
    readonly pinNumber: Redacted.Redacted<string>
  }
}

/** The fields every card needs. */
export const fields = ["cardNumber", "pinNumber", "productLineId"] as const

const problem = (message: string) => new CliError({ code: ExitCode.Usage, message: `batch file: ${message}` })

const row = (line: number, values: Readonly<Record<(typeof fields)[number], string>>): Row => ({
  line,
  card: {
    cardNumber: Redacted.make(values.cardNumber),
    pinNumber: Redacted.make(values.pinNumber),
    productLineId: values.productLineId
  }
})

/** Splits one CSV line into its fields: commas separate, double quotes quote, `""` is a quote inside quotes. */
export const splitCsvLine = (text: string): Result.Result<ReadonlyArray<string>, string> => {
  const out: Array<string> = []
  let field = ""
  let quoted = false
  let i = 0
  while (i < text.length) {
    const char = text[i]!
    if (quoted) {
      if (char === "\"" && text[i + 1] === "\"") {
        field += "\""
        i += 2
        continue
      }
      if (char === "\"") quoted = false
      else field += char
    } else if (char === "\"" && field.trim() === "") {
      quoted = true
      field = ""
    } else if (char === ",") {
      out.push(field)
      field = ""
    } else {
      field += char
    }
    i += 1
  }
  if (quoted) return Result.fail("an unterminated quoted field")
  out.push(field)
  return Result.succeed(out.map((value) => value.trim()))
}

const lines = (text: string): ReadonlyArray<readonly [line: number, text: string]> =>
  text.split(/\r?\n/).map((text, index) => [index + 1, text] as const).filter(([, text]) => text.trim() !== "")

const parseCsv = (text: string): Result.Result<ReadonlyArray<Row>, CliError> =>
  Result.gen(function*() {
    const [header, ...body] = lines(text.replace(/^\uFEFF/, ""))
    if (header === undefined) return []
    const names = yield* Result.mapError(splitCsvLine(header[1]), (reason) => problem(`line ${header[0]}: ${reason}`))
    const columns = fields.map((field) => names.indexOf(field))
    if (columns.some((column) => column < 0)) {
      return yield* Result.fail(problem(`line ${header[0]}: the CSV header must name ${fields.join(", ")}`))
    }
    const rows: Array<Row> = []
    for (const [line, content] of body) {
      const values = yield* Result.mapError(splitCsvLine(content), (reason) => problem(`line ${line}: ${reason}`))
      const [cardNumber, pinNumber, productLineId] = columns.map((column) => values[column] ?? "")
      rows.push(row(line, { cardNumber: cardNumber!, pinNumber: pinNumber!, productLineId: productLineId! }))
    }
    return rows
  })

/** A JSON field as text: a string, or a safe integer (`"productLineId": 1000`). */
const textOf = (value: unknown): string | undefined =>
  typeof value === "string" ? value : Number.isSafeInteger(value) ? String(value) : undefined

const parseJsonLines = (text: string): Result.Result<ReadonlyArray<Row>, CliError> =>
  Result.gen(function*() {
    const rows: Array<Row> = []
    for (const [line, content] of lines(text)) {
      const json = yield* Result.try({
        try: () => JSON.parse(content) as unknown,
        catch: () => problem(`line ${line} is not JSON`)
      })
      if (typeof json !== "object" || json === null || Array.isArray(json)) {
        return yield* Result.fail(problem(`line ${line} is not a JSON object`))
      }
      const record = json as Record<string, unknown>
      const values = fields.map((field) => textOf(record[field]))
      const missing = fields.filter((_, index) => values[index] === undefined)
      if (missing.length > 0) {
        return yield* Result.fail(
          problem(`line ${line}: ${missing.join(", ")} must be ${missing.length === 1 ? "a string" : "strings"}`)
        )
      }
      const [cardNumber, pinNumber, productLineId] = values as Array<string>
      rows.push(row(line, { cardNumber: cardNumber!, pinNumber: pinNumber!, productLineId: productLineId! }))
    }
    return rows
  })

/** Reads the cards of a batch file, CSV or JSON lines. */
export const parse = (text: string): Result.Result<ReadonlyArray<Row>, CliError> =>
  text.trimStart().replace(/^\uFEFF/, "").startsWith("{") ? parseJsonLines(text) : parseCsv(text)

/** A row whose card appeared on an earlier row: quoted once, reported. */
export interface Duplicate {
  readonly line: number
  readonly firstLine: number
}

/** The cards of the rows, each once, by fingerprint; and the rows that repeat an earlier card. */
export const distinct = <C extends { readonly row: Row; readonly key: string }>(
  cards: ReadonlyArray<C>
): { readonly unique: ReadonlyArray<C>; readonly duplicates: ReadonlyArray<Duplicate> } => {
  const first = new Map<string, C>()
  const duplicates: Array<Duplicate> = []
  for (const card of cards) {
    const seen = first.get(card.key)
    if (seen === undefined) first.set(card.key, card)
    else duplicates.push({ line: card.row.line, firstLine: seen.row.line })
  }
  return { unique: Array.from(first.values()), duplicates }
}
