/**
 * `gcx result <requestId>`: the outcome of a durable quote, rendered as `gcx quote` renders it (one
 * line, or one JSON event with `--json`), with its exit code. Without `--wait`, a quote still running
 * is said so (exit 5, with the command that waits); with `--wait`, it is awaited for `--timeout`
 * seconds at most. A requestId no quote was submitted with is a usage error (exit 2). It never falls
 * back to the embedded sandbox: without connection settings it exits 2 naming them (a quote resumed
 * against a sandbox would fail for good); with `--embedded`, it shows the embedded sandbox's quotes
 * (`DurableDeployment.sandboxDatabaseFile`). A quote whose
 * POST failed while its transaction may exist ends with the flags that learn it (as `gcx quote
 * --durable` says them). An outcome shown settles the card's claim on the quote: the card's next
 * `gcx quote --durable` is a new quote. Its flags are in `commands/Result`.
 */
import * as Ids from "@gcx/core/Ids"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Connection from "../Connection.js"
import * as DurableDeployment from "../DurableDeployment.js"
import * as DurablePoller from "../DurablePoller.js"
import * as ExitCode from "../ExitCode.js"
import * as Text from "../Text.js"
import * as Quote from "./Quote.js"

/** What `gcx result` is given: its argument and flags (`commands/Result`). */
export interface Flags {
  readonly requestId: string
  readonly wait: boolean
  readonly timeout: number
  readonly json: boolean
  readonly connection: Connection.Flags
}

/** The database `gcx result` reads, as its not-found line names it (the choice of `DurablePoller.pollerLayer`). */
const databaseOf = (connection: Connection.Flags) =>
  Effect.gen(function*() {
    const url = yield* DurableDeployment.databaseUrl
    if (Option.isSome(url)) return `the database of GCX_DATABASE_URL, ${DurableDeployment.where(url.value)}`
    const sandbox = Option.isSome(yield* Connection.embeddedReason(connection, "none"))
    const file = Text.safe(yield* DurableDeployment.embeddedFile(sandbox))
    return sandbox ? `the embedded sandbox's database, ${file}` : `the database file ${file} (GCX_DATABASE_FILE)`
  })

/** No quote of `requestId` in the database read: a usage error naming that database. */
const notFound = (requestId: string, connection: Connection.Flags) =>
  Effect.flatMap(databaseOf(connection), (database) =>
    Effect.fail(
      new ExitCode.CliError({
        code: ExitCode.ExitCode.Usage,
        message: `no durable quote was submitted with requestId '${Text.safe(requestId.slice(0, 80))}' in ${database}`
      })
    ))

const pending = (requestId: string, why: string) =>
  new ExitCode.CliError({
    code: ExitCode.ExitCode.ServiceFailure,
    message: `the durable quote ${requestId} ${why}; wait for it with: gcx result ${requestId} --wait`
  })

const isRequestId = Schema.is(Ids.StoredRequestId)

/** A requestId that none could be (empty, blank, too long): refused before the database is opened. */
const malformed = new ExitCode.CliError({
  code: ExitCode.ExitCode.Usage,
  message: "the requestId must be 1 to 64 visible characters, as gcx printed it"
})

/** The `result` command's handler. */
export const handler = (flags: Flags) => isRequestId(flags.requestId) ? show(flags) : Effect.fail(malformed)

/** The outcome of the quote `requestId`, shown. */
const show = ({ connection, json, requestId, timeout, wait }: Flags) =>
  Effect.gen(function*() {
    const quotes = yield* DurableQuotes.DurableQuotes
    const outcome = wait
      ? quotes.result(requestId).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Exit.isFailure(exit) &&
            Option.exists(Cause.findErrorOption(exit.cause), (error) => error._tag === "QuoteNotFound")
            ? notFound(requestId, connection)
            : Effect.succeed(exit)
        ),
        Effect.timeoutOption(Duration.seconds(timeout))
      )
      : Effect.catchTag(quotes.poll(requestId), "QuoteNotFound", () => notFound(requestId, connection))
    const exit = yield* outcome
    if (Option.isNone(exit)) {
      return yield* pending(requestId, wait ? `did not end within ${timeout} s` : "has no outcome yet")
    }
    // once shown, the card's next `gcx quote --durable` is a new quote, as after `gcx quote --durable` shows it
    // … but not after a fault inside gcx: the quote may go on
    const settle = DurablePoller.isFault(exit.value)
      ? Stream.empty
      : Stream.drain(Stream.fromEffect(quotes.settleRequest(requestId)))
    return yield* Quote.follow(
      () => Stream.concat(Stream.fromEffect(DurablePoller.terminalEvent(exit.value, undefined, requestId)), settle),
      json
    )
  }).pipe(
    Quote.withResumeHint(true),
    Effect.provide(DurablePoller.pollerLayer(connection, { fallback: "none", purpose: "read" }))
  )
