/**
 * The input of `gcx batch`: a CSV file with the header
 * `cardNumber,pinNumber,productLineId` (in any order; other columns are
 * ignored; fields may be double-quoted), or JSON lines, one object with those
 * three fields per line. The format is told by the first non-blank character:
 * `{` for JSON lines, anything else for CSV. Blank lines are skipped.
 *
 * The file is streamed (`rows`), so memory does not grow with its size; a
 * line over 64 KiB is refused as soon as it is read. CSV fields cannot span
 * lines.
 *
 * A problem with the file names its line, never its content: a line that is
 * not a JSON object, a JSON line without one of the fields, a CSV row with
 * more fields than its header (but empty ones at its end) or without one of
 * the card's columns (its fields would be shifted; other columns may be left
 * off at its end). The
 * card number and PIN are `Redacted` from the moment they are read; each card
 * is validated (`Card.validate`) when it is submitted, so one bad card (an
 * empty PIN, a field too long) is one failed card, not a failed batch.
 */
import type * as Card from "@gcx/core/Card"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import type * as PlatformError from "effect/PlatformError"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as BatchLines from "./BatchLines.js"
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

const refuse = (line: number, reason: string) => Result.fail(problem(`line ${line}: ${reason}`))

/** A JSON field as text: a string, or a safe integer (`"productLineId": 1000`). */
const textOf = (value: unknown): string | undefined =>
  typeof value === "string" ? value : Number.isSafeInteger(value) ? String(value) : undefined

const jsonRow = (line: number, content: string): Result.Result<Row, CliError> => {
  let json: unknown
  try {
    json = JSON.parse(content)
  } catch {
    return Result.fail(problem(`line ${line} is not JSON`))
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return Result.fail(problem(`line ${line} is not a JSON object`))
  }
  const record = json as Record<string, unknown>
  const absent = fields.filter((field) => record[field] === undefined)
  if (absent.length > 0) return refuse(line, `${absent.join(", ")} ${absent.length === 1 ? "is" : "are"} missing`)
  const values = fields.map((field) => textOf(record[field]))
  const wrong = fields.filter((_, index) => values[index] === undefined)
  if (wrong.length > 0) {
    return refuse(line, `${wrong.join(", ")} must be ${wrong.length === 1 ? "a string" : "strings"}`)
  }
  const [cardNumber, pinNumber, productLineId] = values as Array<string>
  return Result.succeed(row(line, { cardNumber: cardNumber!, pinNumber: pinNumber!, productLineId: productLineId! }))
}

/**
 * A reader of a batch file, one line at a time, in order: the first
 * non-blank line tells the format (`{`: JSON lines; else the CSV header).
 * Gives the line's row, `undefined` for a blank line or the header, or the
 * problem of the line.
 */
export type Parser = (line: number, text: string) => Result.Result<Row | undefined, CliError>

/** A new `Parser`, for one pass over one file. */
export const parser = (): Parser => {
  let format:
    | "json"
    | { readonly columns: ReadonlyArray<number>; readonly width: number; readonly needed: number }
    | undefined
  return (line, raw) => {
    const text = format === undefined ? raw.replace(/^\uFEFF/, "") : raw
    if (text.trim() === "") return Result.succeed(undefined)
    if (format === "json") return jsonRow(line, text)
    if (format === undefined) {
      if (text.trimStart().startsWith("{")) {
        format = "json"
        return jsonRow(line, text)
      }
      const names = splitCsvLine(text)
      if (Result.isFailure(names)) return refuse(line, names.failure)
      const columns = fields.map((field) => names.success.indexOf(field))
      if (columns.some((column) => column < 0)) {
        return refuse(line, `the CSV header must name ${fields.join(", ")}`)
      }
      format = { columns, width: names.success.length, needed: Math.max(...columns) + 1 }
      return Result.succeed(undefined)
    }
    const values = splitCsvLine(text)
    if (Result.isFailure(values)) return refuse(line, values.failure)
    // a row wider than its header, or without one of the card's columns, has shifted fields (a PIN
    // read as the product line, and written out as one); only other columns may be left off at its
    // end, and only empty fields added there (a trailing comma)
    const wider = values.success.length > format.width &&
      values.success.slice(format.width).some((value) => value !== "")
    if (wider || values.success.length < format.needed) {
      return refuse(line, `${values.success.length} fields where the header names ${format.width}`)
    }
    const [cardNumber, pinNumber, productLineId] = format.columns.map((column) => values.success[column]!)
    return Result.succeed(row(line, { cardNumber: cardNumber!, pinNumber: pinNumber!, productLineId: productLineId! }))
  }
}

/** Reads the cards of a batch text, CSV or JSON lines, whole (`rows` streams a file). */
export const parse = (text: string): Result.Result<ReadonlyArray<Row>, CliError> => {
  const next = parser()
  const rows: Array<Row> = []
  const lines = text.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const result = next(index + 1, lines[index]!.replace(/\r$/, ""))
    if (Result.isFailure(result)) return Result.fail(result.failure)
    if (result.success !== undefined) rows.push(result.success)
  }
  return Result.succeed(rows)
}

/**
 * The cards of the batch file at `path`, streamed (`BatchLines`): memory does
 * not grow with the file. A line over `BatchLines.maxLineBytes` is refused as
 * soon as it is read; every problem names its line, never its content.
 */
export const rows = (
  path: string
): Stream.Stream<Row, CliError | PlatformError.PlatformError, FileSystem.FileSystem> =>
  Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) =>
    BatchLines.stream(
      fs,
      path,
      (line) => problem(`line ${line} is longer than ${BatchLines.maxLineBytes / 1024} KiB`)
    ).pipe(
      Stream.mapAccumArrayEffect(parser, (next, lines) => {
        const out: Array<Row> = []
        for (const line of lines) {
          const result = next(line.number, line.text)
          if (Result.isFailure(result)) return Effect.fail(result.failure)
          if (result.success !== undefined) out.push(result.success)
        }
        return Effect.succeed([next, out] as const)
      })
    )))
