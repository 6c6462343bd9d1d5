/**
 * The results file of `gcx batch --out <file>`: one JSON line per card, with
 * its index, a key, the masked card, the outcome and the transaction id.
 * It never holds a PIN or a full card number.
 *
 * The key recognises a card on a later run of the same file: an HMAC-SHA-256
 * of the card's index, number, PIN and product line, keyed with the partner's
 * client secret. Unlike a plain hash, it cannot be turned back into a card
 * number by trying the few numbers that match the masked digits.
 *
 * Resuming: a card whose line says `completed`, or a card outcome (group
 * `card`: the card was refused, trying again gives the same answer), is
 * finished and skipped. Any other failure (merchant, service, transport,
 * timeout, request) is tried again, and its old line is replaced.
 */
import type * as PlatformError from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Wire from "@gcx/core/Wire"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { createHmac } from "node:crypto"
import type * as BatchFile from "./BatchFile.js"

const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** The outcome of one card, as one line of the results file. */
export class Result extends Schema.Class<Result>("@gcx/cli/BatchResults/Result")({
  /** The card's position among the cards of the batch file, from 0. */
  index: Schema.Int,
  /** The line of the batch file it was read from, from 1. */
  line: Schema.Int,
  key: Schema.String,
  /** The masked card number. */
  card: Schema.String,
  productLineId: Schema.String,
  status: Schema.Literal("completed", "failed"),
  transactionId: optional(Schema.String),
  actualCardValue: optional(Wire.Money),
  exchangeCardValue: optional(Wire.Money),
  /** The recovery group of the error (`card`, `merchant`, `service`, ...). */
  group: optional(Schema.String),
  /** The error's tag (`InvalidCard`). */
  error: optional(Schema.String),
  errorCode: optional(Schema.String),
  /** What to tell the customer, when the error carries it. */
  userMessage: optional(Schema.String),
  /** The error's message, for the operator. */
  message: optional(Schema.String),
  finishedAt: Wire.Timestamp
}) {}

/** Whether a result is final: the card is skipped on a later run. */
export const isFinal = (result: Result): boolean => result.status === "completed" || result.group === "card"

/** The key of a card: an HMAC-SHA-256 of its index, number, PIN and product line, keyed with `secret`. */
export const key = (secret: Redacted.Redacted<string>, index: number, row: BatchFile.Row): string =>
  createHmac("sha256", Redacted.value(secret))
    .update([
      String(index),
      Redacted.value(row.card.cardNumber),
      Redacted.value(row.card.pinNumber),
      row.card.productLineId
    ].join("\n"))
    .digest("hex")
    .slice(0, 32)

const ResultLine = Schema.parseJson(Result)
const decodeLine = Schema.decodeUnknownOption(ResultLine)

/** A result as its line, without the newline. */
export const encode = (result: Result): string => Schema.encodeSync(ResultLine)(result)

/** What a results file holds: the lines that decode, and how many did not (a line cut short by a crash). */
export interface Loaded {
  readonly results: ReadonlyArray<Result>
  readonly unreadable: number
}

/** Reads a results file; a missing file holds nothing. */
export const load = (path: string): Effect.Effect<Loaded, PlatformError.PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(path))) return { results: [], unreadable: 0 }
    const lines = (yield* fs.readFileString(path)).split("\n").filter((line) => line.trim() !== "")
    const decoded = lines.map((line) => decodeLine(line))
    return { results: decoded.flatMap(Option.toArray), unreadable: decoded.filter(Option.isNone).length }
  })

/**
 * Rewrites the results file with `results` (through a temporary file and a
 * rename, so that a crash leaves the old file or the new one, whole).
 */
export const rewrite = (
  path: string,
  results: ReadonlyArray<Result>
): Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const temporary = `${path}.tmp`
    yield* fs.writeFileString(temporary, results.map((result) => `${encode(result)}\n`).join(""))
    yield* fs.rename(temporary, path)
  })

/** Appends one result to the results file. */
export const append = (
  path: string,
  result: Result
): Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.writeFileString(path, `${encode(result)}\n`, { flag: "a" }))
