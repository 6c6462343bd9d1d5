/**
 * `node:sqlite`'s exceptions as `SqlError`s with a typed reason.
 *
 * `node:sqlite` throws an `Error` with `code: "ERR_SQLITE_ERROR"`, SQLite's
 * extended result code in `errcode` (2067 for a unique violation, 5 busy, 14
 * cannot open, ...) and its text in `errstr`; `effect/sql`'s
 * `classifySqliteError` reads a numeric `code` or `errno`, so the code is
 * handed to it as `errno`. SQLite reports a syntax error as the generic
 * `SQLITE_ERROR` (1), told apart here by its message.
 */
import { hasProperty } from "effect/Predicate"
import * as SqlError from "effect/sql/SqlError"

/** What the client was doing: the reason's `operation`. */
export type Operation = "open" | "prepare" | "execute" | "close"

const messageOf = (cause: unknown): string | undefined =>
  hasProperty(cause, "message") && typeof cause.message === "string" && cause.message !== "" ? cause.message : undefined

const errcodeOf = (cause: unknown): number | undefined =>
  hasProperty(cause, "errcode") && typeof cause.errcode === "number" ? cause.errcode : undefined

/** `cause` (a fresh error just thrown) with `errno` set from `node:sqlite`'s `errcode`. */
const withErrno = (cause: unknown, errcode: number | undefined): unknown =>
  errcode === undefined || hasProperty(cause, "errno") ? cause : Object.assign(cause as object, { errno: errcode })

/**
 * The reason for `cause`, thrown by `node:sqlite` while doing `operation`.
 * Its message is `what` followed by SQLite's (which names tables and
 * columns, never values).
 */
export const reason = (cause: unknown, what: string, operation: Operation): SqlError.SqlErrorReason => {
  const detail = messageOf(cause)
  const message = detail === undefined ? what : `${what}: ${detail}`
  const errcode = errcodeOf(cause)
  if (errcode === 1 && detail !== undefined && /syntax error|incomplete input/.test(detail)) {
    return new SqlError.SqlSyntaxError({ cause, message, operation })
  }
  return SqlError.classifySqliteError(withErrno(cause, errcode), { message, operation })
}

/** `cause` as a `SqlError` (see `reason`). */
export const fromCause = (cause: unknown, what: string, operation: Operation): SqlError.SqlError =>
  new SqlError.SqlError({ reason: reason(cause, what, operation) })

/** The database was used after it closed. */
export const closed = (operation: Operation): SqlError.SqlError =>
  new SqlError.SqlError({
    reason: new SqlError.ConnectionError({
      cause: new Error("the database is closed"),
      message: "the database is closed",
      operation
    })
  })
