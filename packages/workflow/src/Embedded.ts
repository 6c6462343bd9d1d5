/**
 * The embedded deployment: one process, the cluster's `SingleRunner` over
 * SQLite in a file (default `.gcx/gcx.db`), with the cluster's workflow
 * engine. No server to run; quotes in flight survive a restart of the
 * process, which picks them up from the file.
 *
 * One process per file: the single runner owns every shard of its database,
 * and holds an exclusive lock on it. The files are the user's alone: folder
 * 0700, database, `-wal` and `-shm` 0600, whatever the umask.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import type * as QuoteEvents from "@gcx/poller/QuoteEvents"
import type * as QuotePoller from "@gcx/poller/QuotePoller"
import * as Cause from "effect/Cause"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import type * as Sharding from "effect/cluster/Sharding"
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SingleRunner from "effect/cluster/SingleRunner"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlError from "effect/sql/SqlError"
import type { WorkflowEngine } from "effect/workflow/WorkflowEngine"
import type * as CardCipher from "./CardCipher.js"
import * as DurableQuotes from "./DurableQuotes.js"
import * as PrivateFiles from "./internal/privateFiles.js"
import * as SqliteClient from "./internal/sqlite/SqliteClient.js"
import * as ServiceBinding from "./ServiceBinding.js"

/** Where the embedded database lives unless told. */
export const defaultFilename = ".gcx/gcx.db"

/**
 * SQLite's `synchronous` setting (the database runs in WAL mode):
 * - `NORMAL` (the default): a commit is written to the WAL without waiting
 *   for the disk; the WAL is synced at checkpoints. A process that crashes or
 *   is killed loses nothing committed. An OS crash or a power loss may lose
 *   the last commits (never corrupts the file): a quote submitted just before
 *   may be gone, one whose activity result was lost runs that step again, and
 *   one whose attempt counter's last bump was lost may repeat a
 *   `previousAttempts`, which the service refuses (that quote fails with
 *   `InvalidRequest`). Never a second transaction for a requestId.
 * - `FULL`: every commit waits for the disk (an fsync per transaction, about
 *   six per quote), so not even a power loss loses a commit.
 */
export type Synchronous = "NORMAL" | "FULL"

/** Settings of the embedded deployment. */
export interface Options {
  /** The SQLite file; its directory is created when missing. Default `.gcx/gcx.db`. */
  readonly filename?: string | undefined
  /** Overrides of the sharding settings (see `shardingDefaults`). */
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
  /** SQLite's `synchronous` (see `Synchronous`). Default `NORMAL`. */
  readonly synchronous?: Synchronous | undefined
  /**
   * The service the file's quotes belong to (`ServiceBinding`): recorded on first use, and checked
   * before any quote is resumed (`ServiceMismatch`). None: the file is not bound (a sandbox's).
   */
  readonly service?: ServiceBinding.Identity | undefined
}

/**
 * The sharding settings of the embedded runner:
 * - one shard (not 300): the single runner owns every shard anyway, and the
 *   storage poll, which runs once per stored message, names every shard in its
 *   SQL (300 literals to parse at each poll, a statement prepared anew each
 *   time); a file written with more shards is moved onto the one at open
 *   (see `layerSqlite`);
 * - stored messages are looked for every second (not 10 s), so that a
 *   restarted process resumes its quotes quickly;
 * - a finished quote's workflow entity is dropped after 5 s idle (not 60 s):
 *   thousands of finished entities otherwise stay in memory for a minute, for
 *   the garbage collector to walk. An entity with a request in progress is
 *   never dropped, and one dropped is rebuilt by its next message;
 * - a stopping process waits at most 3 s (not 15 s) for its quotes in flight:
 *   what it stops is resumed from the file by the next start.
 */
export const shardingDefaults: Partial<ShardingConfig.ShardingConfig["Service"]> = {
  shardsPerGroup: 1,
  entityMessagePollInterval: Duration.seconds(1),
  entityMaxIdleTime: Duration.seconds(5),
  entityTerminationTimeout: Duration.seconds(3)
}

/** The cluster's message table (`SqlMessageStorage`, prefix `cluster`). */
const messagesTable = "cluster_messages"

/**
 * Moves the stored messages of a file written with more shards (the
 * cluster's default, 300) onto the one shard of `shardingDefaults`, so that
 * the quotes they hold are read again. With one shard every entity maps to it,
 * so one statement does it; nothing to do on a new file.
 */
const moveToOneShard = (context: Context.Context<SqlClient.SqlClient>): Effect.Effect<void, SqlError.SqlError> => {
  const sql = Context.get(context, SqlClient.SqlClient)
  return sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ${messagesTable}`
    .pipe(
      Effect.flatMap((tables) =>
        tables.length === 0
          ? Effect.void
          : Effect.asVoid(sql`UPDATE ${sql(messagesTable)} SET shard_id = ${oneShard} WHERE shard_id <> ${oneShard}`)
      )
    )
}

const oneShard = "default:1"

/** The message of a failure to open the database, without the cause's wrapping. */
const reasonOf = (failure: unknown): string =>
  SqlError.isSqlError(failure)
    ? failure.reason.message ?? failure.reason._tag
    : failure instanceof Error
    ? failure.message
    : String(failure)

/** A database that cannot be opened (the driver throws), or is locked, as a `SqlError` that says which and why. */
const openError =
  (filename: string, exclusive: boolean) => (cause: Cause.Cause<unknown>): Effect.Effect<never, SqlError.SqlError> => {
    const failure = Cause.squash(cause)
    const reason = reasonOf(failure)
    const locked = (SqlError.isSqlError(failure) && failure.reason._tag === "LockTimeoutError") ||
      /locked|busy/i.test(reason)
    const operation = "open"
    return Effect.fail(
      new SqlError.SqlError({
        reason: locked
          ? new SqlError.LockTimeoutError({
            cause: failure,
            operation,
            message: exclusive
              ? `the embedded database ${filename} is in use by another process (one process per database file)`
              : `the embedded database ${filename} stayed locked by another process`
          })
          : new SqlError.ConnectionError({
            cause: failure,
            operation,
            message: `the embedded database ${filename} could not be opened: ${reason}`
          })
      })
    )
  }

/** Settings of the embedded database. */
export interface SqliteOptions {
  /** SQLite's `synchronous` (see `Synchronous`). Default `NORMAL`. */
  readonly synchronous?: Synchronous | undefined
  /** Whether the runner on it uses one shard (`shardingDefaults`): its stored messages are moved onto it. Default true. */
  readonly oneShard?: boolean | undefined
  /**
   * Whether this process holds the file alone (`locking_mode = EXCLUSIVE`).
   * Default true. False for a file that other processes open at the same time
   * (WAL: readers never wait; a writer waits up to 5 s for another), as the
   * gateway's API keys (`gcx serve` and `gcx serve keys`): never for a file a
   * runner runs quotes on.
   */
  readonly exclusive?: boolean | undefined
}

/**
 * SQLite in `filename` (WAL mode), private to the user whatever the umask
 * (its folder created 0700, the database, `-wal` and `-shm` 0600; looser ones
 * left by an earlier gcx are tightened, with one warning), locked for this
 * process alone (`locking_mode = EXCLUSIVE`, held until the connection closes
 * or the process dies: a second process on the same file fails, after
 * SQLite's busy timeout of 5 s, instead of running the same quotes) unless
 * `exclusive` is false, `synchronous` set, and its stored messages on one shard.
 */
export const layerSqlite = (
  filename: string = defaultFilename,
  options: SqliteOptions = {}
): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> => {
  const exclusive = options.exclusive !== false
  return Layer.effectContext(
    Effect.gen(function*() {
      const tightened = yield* Effect.sync(() => PrivateFiles.prepare(filename))
      if (tightened.length > 0) {
        yield* Effect.logWarning(
          `the embedded database ${filename} could be read by others: tightened ${tightened.join(", ")}`
        )
      }
      const context = yield* Layer.build(
        SqliteClient.layer({
          filename,
          synchronous: options.synchronous ?? "NORMAL",
          lockingMode: exclusive ? "EXCLUSIVE" : "NORMAL"
        })
      )
      if (options.oneShard !== false) yield* moveToOneShard(context)
      return context
    }).pipe(Effect.catchCause(openError(filename, exclusive)))
  )
}

/**
 * The deployment: the workflow engine of a single runner over SQLite in a file, bound to
 * `options.service` (checked before the runner starts) when given.
 */
export const layer = (options: Options = {}): Layer.Layer<
  WorkflowEngine | Sharding.Sharding | MessageStorage.MessageStorage | SqlClient.SqlClient,
  Config.ConfigError | SqlError.SqlError | ServiceBinding.ServiceMismatch
> => {
  const sharding = { ...shardingDefaults, ...options.sharding }
  return ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(SingleRunner.layer({ runnerStorage: "memory", shardingConfig: sharding })),
    Layer.provide(NodeCrypto.layerDigest),
    Layer.provideMerge(ServiceBinding.layer(options.service)),
    Layer.provideMerge(
      layerSqlite(options.filename, { synchronous: options.synchronous, oneShard: sharding.shardsPerGroup === 1 })
    )
  )
}

/**
 * Durable quotes embedded: the API, the workflow, the poller and its bus over
 * the embedded deployment. Needs the exchange client and the card cipher.
 * `outcomes`, built over the deployment, tells the workflow's outcomes
 * somewhere more (`DurableQuotes.withOutcomes`; the gateway's webhooks).
 */
export const layerQuotes = <E2 = never, R2 = never>(
  options: Options & DurableQuotes.RunnerOptions = {},
  outcomes?: Layer.Layer<never, E2, R2>
): Layer.Layer<
  | DurableQuotes.DurableQuotes
  | QuotePoller.QuotePoller
  | QuoteEvents.QuoteEvents
  | DurableQuotes.Engine
  | SqlClient.SqlClient,
  Config.ConfigError | SqlError.SqlError | ServiceBinding.ServiceMismatch | E2,
  | ExchangeClient.ExchangeClient
  | CardCipher.CardCipher
  | Exclude<R2, WorkflowEngine | Sharding.Sharding | MessageStorage.MessageStorage | SqlClient.SqlClient>
> => DurableQuotes.layerRunner(DurableQuotes.withOutcomes(layer(options), outcomes), options)
