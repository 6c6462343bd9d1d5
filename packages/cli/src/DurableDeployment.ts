/**
 * Where the durable quotes of `--durable`, `gcx result` and `gcx serve` live:
 * the deployment the settings choose (embedded on SQLite in
 * `GCX_DATABASE_FILE`, the embedded sandbox's in a file of its own, or
 * client-only on the runners of `GCX_DATABASE_URL`), bound to the service of
 * the connection (`ServiceBinding`), and its failures as the CLI reports them.
 */
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import type * as QuoteEvents from "@gcx/poller/QuoteEvents"
import * as QuoteJournal from "@gcx/poller/QuoteJournal"
import type * as QuotePoller from "@gcx/poller/QuotePoller"
import * as CardCipher from "@gcx/workflow/CardCipher"
import * as ClusterSecurity from "@gcx/workflow/ClusterSecurity"
import * as DurableQuotes from "@gcx/workflow/DurableQuotes"
import * as Embedded from "@gcx/workflow/Embedded"
import * as EventRelay from "@gcx/workflow/EventRelay"
import * as Runner from "@gcx/workflow/Runner"
import * as ServiceBinding from "@gcx/workflow/ServiceBinding"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as SqlError from "effect/sql/SqlError"
import * as Path from "node:path"
import * as Connection from "./Connection.js"
import * as DatabaseFailure from "./DatabaseFailure.js"
import { CliError, ExitCode } from "./ExitCode.js"

/** A layer of `A` that fails: the durable store (the quotes' journal) could not be opened. */
const unopened = <A>(message: string): Layer.Layer<A, QuoteJournal.JournalError> =>
  Layer.effectContext(Effect.fail(new QuoteJournal.JournalError({ operation: "open", message })))

/**
 * The embedded database is another process's (SQLite's lock): a setup to change (wait for it, or give this
 * one its own `GCX_DATABASE_FILE`), exit 2; any other failure to open it is `unopened`.
 */
export const lockedOrUnopened = <A>(error: SqlError.SqlError): Layer.Layer<A, QuoteJournal.JournalError | CliError> =>
  error.reason._tag === "LockTimeoutError"
    ? Layer.effectContext(Effect.fail(new CliError({ code: ExitCode.Usage, message: `database: ${error.message}` })))
    : unopened<A>(error.message)

/** A database that holds another service's quotes (`ServiceBinding`), as a layer that fails: exit 2. */
export const serviceMismatch = <A>(error: ServiceBinding.ServiceMismatch): Layer.Layer<A, CliError> =>
  Layer.effectContext(Effect.fail(DatabaseFailure.serviceMismatch(error)))

/**
 * The deployment of a client-only node on the runners of `databaseUrl`
 * (`@gcx/workflow/Runner`), authenticated as `ClusterSecurity.securityConfig` says
 * (`GCX_RUNNER_TLS_*`, or `GCX_RUNNER_INSECURE_LOOPBACK=true`), the database bound to `service`
 * when given (`ServiceBinding`; a `CliError`, exit 2, when it holds another's). A database that
 * cannot be reached or read is a `JournalError` that names it, as for the embedded file: the
 * durable store is the quotes' journal.
 */
export const clientDeployment = (
  databaseUrl: Redacted.Redacted<string>,
  service?: ServiceBinding.Identity | undefined
): Layer.Layer<Runner.Services, Config.ConfigError | QuoteJournal.JournalError | CliError> =>
  Layer.unwrap(
    Effect.map(
      Effect.all({ security: ClusterSecurity.securityConfig(), limits: ClusterSecurity.limitsConfig }),
      ({ limits, security }) => Runner.layerClient({ databaseUrl, security, limits, service })
    )
  ).pipe(
    Layer.catchTag(
      "DatabaseUnreachable",
      (error) => Layer.effectContext(Effect.fail(DatabaseFailure.databaseFailure(error)))
    ),
    Layer.catchTag("SqlError", (error) => unopened<Runner.Services>(error.message)),
    Layer.catchTag("ServiceMismatch", serviceMismatch<Runner.Services>)
  )

/**
 * `make` given the service of `client`'s configuration, or the embedded sandbox's
 * (`ServiceBinding.serviceOf`), and built over `client`.
 */
export const withService = <A, E, R, E2>(
  client: Layer.Layer<ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig, E2>,
  embeddedSandbox: boolean,
  make: (service: ServiceBinding.Identity) => Layer.Layer<A, E, R>
): Layer.Layer<A, E | E2, Exclude<R, ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig>> =>
  Layer.unwrap(
    Effect.map(ExchangeConfig.ExchangeConfig, (config) => make(ServiceBinding.serviceOf(config, embeddedSandbox)))
  ).pipe(Layer.provide(client))

/** Where the embedded database lives: `GCX_DATABASE_FILE`, default `.gcx/gcx.db`. */
export const databaseFile: Config.Config<string> = Config.String("GCX_DATABASE_FILE").pipe(
  Config.withDefault(Embedded.defaultFilename)
)

/**
 * The embedded database of the quotes made on the embedded sandbox: a file of
 * their own beside `filename` (`.gcx/gcx.db` gives `.gcx/gcx.sandbox.db`). The
 * quotes of `filename` belong to a real service: they are never resumed
 * against a sandbox, where they would fail for good (`TransactionNotFound`).
 * The sandbox's quotes can be shown later (`gcx result --embedded`); one
 * still running when its process ended cannot be resumed (its transaction
 * ended with that sandbox).
 */
export const sandboxDatabaseFile = (filename: string): string => {
  const parsed = Path.parse(filename)
  return Path.join(parsed.dir, `${parsed.name}.sandbox${parsed.ext === "" ? ".db" : parsed.ext}`)
}

/** The embedded database file: `databaseFile`, or its sandbox's beside it (`sandboxDatabaseFile`) for the embedded sandbox. */
export const embeddedFile = (embeddedSandbox: boolean): Effect.Effect<string, Config.ConfigError> =>
  Effect.gen(function*() {
    const file = yield* databaseFile
    return embeddedSandbox ? sandboxDatabaseFile(file) : file
  })

/** What the durable layers of the CLI fail with: configuration, or the embedded database. */
export type LayerError =
  | Config.ConfigError
  | QuoteJournal.JournalError
  | CliError
  | Layer.Error<ReturnType<typeof Embedded.layerQuotes<never, never>>>

/** The services `--durable` provides to the commands. */
type Quotes<E> = Layer.Layer<
  DurableQuotes.DurableQuotes | QuotePoller.QuotePoller | QuoteEvents.QuoteEvents,
  E | LayerError,
  CardCipher.CardCipher
>

/**
 * Where a client-only node submits, as said on stderr: `PostgreSQL db.example.com:5432/gcx`, the host,
 * port and database of `GCX_DATABASE_URL`, never its user or password.
 */
export const where = (databaseUrl: Redacted.Redacted<string>): string => {
  try {
    const url = new URL(Redacted.value(databaseUrl))
    if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") return "GCX_DATABASE_URL (not a PostgreSQL URL)"
    const host = url.hostname !== "" ? url.host : url.searchParams.get("host") ?? "localhost"
    const database = decodeURIComponent(url.pathname.replace(/^\//, ""))
    return `PostgreSQL ${host}${database === "" ? "" : `/${database}`}`
  } catch {
    return "PostgreSQL (GCX_DATABASE_URL)"
  }
}

/** `GCX_DATABASE_URL`: set on a client-only node of runners on PostgreSQL, unset for the embedded deployment. */
export const databaseUrl: Config.Config<Option.Option<Redacted.Redacted<string>>> = Config.option(
  Config.Redacted("GCX_DATABASE_URL")
)

/**
 * What a command does with the durable quotes: submits them (`quote`, `batch`),
 * or reads the outcomes recorded (`result`). A client-only node says which, and where.
 */
export type Purpose = "submit" | "read"

/** The line a client-only node writes to stderr when it starts: what it does, on which database. */
const announcement = (purpose: Purpose, databaseUrl: Redacted.Redacted<string>): string =>
  purpose === "read"
    ? `gcx: client-only, reading the durable quotes of ${where(databaseUrl)}`
    : `gcx: --durable: client-only, submitting to the runners of ${where(databaseUrl)}`

/**
 * Says on stderr when no runner of the database is alive (`Runner.liveRunners`): a client-only
 * node's quotes then wait, silent, until one starts. Says nothing when the runners cannot be counted.
 */
const noRunnerNotice = (databaseUrl: Redacted.Redacted<string>) =>
  Runner.liveRunners.pipe(
    Effect.flatMap((live) =>
      live === 0
        ? Console.error(
          `gcx: no runner of ${where(databaseUrl)} is alive: the quotes wait until one starts (gcx runner)`
        )
        : Effect.void
    ),
    Effect.ignore
  )

/**
 * The durable quotes of `--durable` over an exchange client: client-only when
 * `databaseUrl` (`GCX_DATABASE_URL`) is given, embedded on SQLite otherwise. The one place that
 * picks the deployment.
 */
export const layerQuotes = <E>(
  client: Layer.Layer<ExchangeClient.ExchangeClient | ExchangeConfig.ExchangeConfig, E>,
  databaseUrl: Option.Option<Redacted.Redacted<string>>,
  embeddedSandbox = false,
  purpose: Purpose = "submit"
): Layer.Layer<
  DurableQuotes.DurableQuotes | QuotePoller.QuotePoller | QuoteEvents.QuoteEvents,
  E | LayerError
> =>
  Layer.unwrap(Effect.gen(function*() {
    if (Option.isSome(databaseUrl)) {
      yield* Console.error(announcement(purpose, databaseUrl.value))
      const clientOnly: Quotes<E> = withService(client, embeddedSandbox, (service) =>
        Layer.mergeAll(
          DurableQuotes.layer(),
          EventRelay.layerSubscriber,
          Layer.effectDiscard(noRunnerNotice(databaseUrl.value))
        ).pipe(
          Layer.provideMerge(clientDeployment(databaseUrl.value, service)),
          Layer.provideMerge(Connection.withPoller(client))
        ))
      return clientOnly
    }
    const filename = yield* embeddedFile(embeddedSandbox)
    const embedded: Quotes<E> = withService(
      client,
      embeddedSandbox,
      (service) => Embedded.layerQuotes({ filename, service })
    )
    return embedded
  })).pipe(Layer.provide(CardCipher.layerConfig()))
