/**
 * Reads of the durable store that wait through an outage. The engine dies on a failure of its
 * storage (`effect/cluster`'s `PersistenceError`, or the `SqlError` under it), and so did gcx's own
 * reads: a client-only node that lost its database for a few seconds ended the quotes it awaited
 * with a defect, though they went on in the runners, and their cards were quoted again. Now such a
 * read is tried again, from 100 ms backing off to 2 s, with one warning, until it succeeds or the
 * caller gives up (its timeout, an interrupt). Any other defect stays one. Only what is the same
 * when tried again goes through it: reads, and writes keyed by what they write (a requestId, an
 * execution id).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as SqlError from "effect/sql/SqlError"

/** The `SqlError` of `cause`, bare or inside the engine's `PersistenceError`, if it is one. */
const sqlErrorOf = (cause: Cause.Cause<unknown>): SqlError.SqlError | undefined => {
  let failure: unknown = Cause.squash(cause)
  if (typeof failure === "object" && failure !== null && (failure as { _tag?: unknown })._tag === "PersistenceError") {
    failure = (failure as { readonly cause?: unknown }).cause
  }
  return SqlError.isSqlError(failure) ? failure : undefined
}

/**
 * The SQLSTATEs of a PostgreSQL server that is going away or coming back, which `@effect/sql-pg`
 * reports as an `UnknownError`: `57P01` (an administrator shut it down), `57P02` (a crash), `57P03`
 * (it is starting up or shutting down), `53300` and `53400` (out of connections). Not a full disk or
 * memory (`53100`, `53200`), which may never pass.
 */
const passingStates = /^(?:57P0[1-3]|53300|53400)$/

/**
 * Whether `cause` is an outage of the store: an `SqlError` that may pass by itself (`isRetryable`:
 * the connection, a deadlock, a lock or statement timeout; or a server going away or coming back,
 * `passingStates`), failed or died with, bare or inside the engine's `PersistenceError`. Any other
 * SQL failure (a syntax error, a privilege revoked, a constraint, a corrupt file) is not waited for.
 */
export const isStoreFailure = (cause: Cause.Cause<unknown>): boolean => {
  if (Cause.hasInterrupts(cause)) return false
  const failure = sqlErrorOf(cause)
  if (failure === undefined) return false
  if (failure.isRetryable) return true
  const state = (failure.reason.cause as { readonly code?: unknown } | undefined)?.code
  return typeof state === "string" && passingStates.test(state)
}

/** What a warning says of a store failure: its SQL reason's tag and message, never a value. */
const reasonOf = (cause: Cause.Cause<unknown>): string => {
  const failure = sqlErrorOf(cause)
  return failure === undefined ? "the database failed" : `${failure.reason._tag}: ${failure.message}`
}

/** A store failure on its way to the retry. */
class Outage {
  constructor(readonly cause: Cause.Cause<unknown>) {}
}

/** The pauses between two attempts on a store that is out: 100 ms, doubling to 2 s. */
export const pauses = Schedule.min([Schedule.exponential("100 millis", 2), Schedule.spaced("2 seconds")])

/**
 * `read`, tried again while it fails with the store's failure (see the module), warning once per
 * call. Also for a write that is the same each time: a requestId's record, a workflow's submission
 * under its execution id, which the store keeps once.
 */
export const throughOutages = <A, E, R>(read: Effect.Effect<A, E, R>, what: string): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    let warned = false
    return read.pipe(
      Effect.catchCause((cause): Effect.Effect<never, E | Outage> =>
        isStoreFailure(cause) ? Effect.fail(new Outage(cause)) : Effect.failCause(cause)
      ),
      Effect.tapError((error) => {
        if (!(error instanceof Outage) || warned) return Effect.void
        warned = true
        return Effect.logWarning(`the durable store cannot be reached (${what}): waiting for it`).pipe(
          Effect.annotateLogs({ reason: reasonOf(error.cause) })
        )
      }),
      Effect.retry({ while: (error) => error instanceof Outage, schedule: pauses }),
      // the retry goes on until the read succeeds: an `Outage` never leaves it
      Effect.catchIf(
        (error): error is Outage => error instanceof Outage,
        (outage) => Effect.die(Cause.squash(outage.cause))
      )
    )
  })
