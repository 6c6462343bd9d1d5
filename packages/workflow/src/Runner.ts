/**
 * The PostgreSQL deployments: cluster runners (socket runners of `effect/cluster`, messages and
 * shard locks in PostgreSQL) and client-only nodes (submit and await, run no workflow). Each is a
 * layer providing the `WorkflowEngine` and the `SqlClient`, so the quote workflow and the API plug
 * in on top, as on the embedded deployment.
 *
 * Failover: a runner killed without warning stops refreshing its heartbeat row; the others drop it
 * from the runner list once `shardLockExpiration` has passed since its last heartbeat, reassign its
 * shards, take their advisory locks (PostgreSQL released them when its connection died) and replay
 * its workflows from storage. `shardingConfig` below sets these intervals (see the README).
 *
 * The nodes authenticate each other with mutual TLS before the cluster reads a byte, and every
 * connection's frames are bounded (`ClusterSecurity`): `security` is required on every node.
 *
 * Every node provides `Outcomes` (the terminal outcomes of all runners, over LISTEN); a runner's
 * engine announces the outcomes of the workflows it runs (NOTIFY), and `layerQuotes` relays their
 * progress events (`EventRelay`). A runner logs at INFO the shards it acquires and releases (`ShardLog`).
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as ConfigProblem from "@gcx/core/ConfigProblem"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import { RunnerAddress } from "effect/cluster/RunnerAddress"
import type * as Sharding from "effect/cluster/Sharding"
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type * as SocketServer from "effect/socket/SocketServer"
import * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import type * as CardCipher from "./CardCipher.js"
import * as ClusterSecurity from "./ClusterSecurity.js"
import * as Database from "./Database.js"
import * as DurableQuotes from "./DurableQuotes.js"
import * as EventRelay from "./EventRelay.js"
import * as Transport from "./internal/cluster/transport.js"
import * as Outcomes from "./Outcomes.js"
import * as ServiceBinding from "./ServiceBinding.js"
import * as ShardLog from "./ShardLog.js"

/**
 * Sharding settings of every node (runners and clients must agree on `shardsPerGroup`).
 *
 * - `shardLockRefreshInterval` 2 s: each runner's heartbeat and shard lock refresh.
 * - `shardLockExpiration` 6 s: a runner whose heartbeat is older leaves the runner list and its
 *   shards are reassigned (the library's default is 35 s).
 * - `refreshAssignmentsInterval` 1 s: how often a runner reads the runner list.
 * - `entityMessagePollInterval` 1 s: how often a runner reads unprocessed messages of its shards
 *   (and retries taking shards it should own).
 * - `runnerHealthCheckInterval` 5 s: the ping check of the other runners (a second path to mark a
 *   dead runner unhealthy).
 * - `entityTerminationTimeout` 10 s: on a graceful stop, how long running workflows get to finish
 *   their current step before their shards are released.
 * - `entityMaxIdleTime` 5 s (the library's default is 60 s): a finished quote's workflow entity is
 *   dropped from memory after 5 s idle, so that thousands of finished entities do not stay for a
 *   minute for the garbage collector to walk. An entity with a request in progress (a quote being
 *   polled) is never dropped, and one dropped is rebuilt by its next message.
 *
 * From a SIGKILL to the next poll of a quote the dead runner held: at most 6 s (expiry) + 1 s
 * (assignment refresh) + 1 s (shard acquisition and storage read) + the replay.
 */
export const shardingConfig: Partial<ShardingConfig.ShardingConfig["Service"]> = {
  shardLockRefreshInterval: Duration.seconds(2),
  shardLockExpiration: Duration.seconds(6),
  refreshAssignmentsInterval: Duration.seconds(1),
  entityMessagePollInterval: Duration.seconds(1),
  runnerHealthCheckInterval: Duration.seconds(5),
  entityTerminationTimeout: Duration.seconds(10),
  entityMaxIdleTime: Duration.seconds(5)
}

/** What a deployment provides: the engine, the database, and the cluster under them. */
export type Services =
  | WorkflowEngine.WorkflowEngine
  | Sharding.Sharding
  | MessageStorage.MessageStorage
  | SqlClient.SqlClient
  | PgClient.PgClient
  | Outcomes.Outcomes

/** What building a runner's deployment fails with. */
export type RunnerError =
  | Database.DatabaseUnreachable
  | SocketServer.SocketServerError
  | Config.ConfigError
  | ServiceBinding.ServiceMismatch
  | SqlError.SqlError

/** What building a client-only node's deployment fails with. */
export type ClientError = Exclude<RunnerError, SocketServer.SocketServerError>

/** Settings of a runner. */
export interface RunnerOptions {
  /** The PostgreSQL URL (`GCX_DATABASE_URL`). */
  readonly databaseUrl: Redacted.Redacted
  /** The address the other nodes reach this runner at (`GCX_RUNNER_ADDRESS`, `host:port`). */
  readonly runnerAddress: RunnerAddress
  /** The address to listen on; defaults to `runnerAddress`. */
  readonly listenAddress?: RunnerAddress | undefined
  /** Overrides of `shardingConfig`. */
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
  /** How the nodes authenticate each other (`ClusterSecurity.securityConfig`). */
  readonly security: ClusterSecurity.Security
  /** Bounds of the connections; default `ClusterSecurity.defaultLimits`. */
  readonly limits?: ClusterSecurity.Limits | undefined
  /**
   * The service the database's quotes belong to (`ServiceBinding`): recorded on first use, and
   * checked before the node joins the cluster (`ServiceMismatch`). None: not bound (a sandbox's).
   */
  readonly service?: ServiceBinding.Identity | undefined
}

/** Settings of a client-only node. */
export interface ClientOptions {
  /** The PostgreSQL URL (`GCX_DATABASE_URL`). */
  readonly databaseUrl: Redacted.Redacted
  /** Overrides of `shardingConfig`. */
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
  /** How the nodes authenticate each other (`ClusterSecurity.securityConfig`). */
  readonly security: ClusterSecurity.Security
  /** Bounds of the connections; default `ClusterSecurity.defaultLimits`. */
  readonly limits?: ClusterSecurity.Limits | undefined
  /**
   * The service the database's quotes belong to (`ServiceBinding`): recorded on first use, and
   * checked before the node joins the cluster (`ServiceMismatch`). None: not bound (a sandbox's).
   */
  readonly service?: ServiceBinding.Identity | undefined
}

/** `host:port` as a runner address: a non-empty host and a port in 1..65535. */
export const RunnerAddressFromString: Schema.Codec<RunnerAddress, string> = Schema.String.pipe(
  Schema.decodeTo(
    Schema.toType(RunnerAddress),
    SchemaTransformation.transformEffect({
      decode: (input) => {
        const match = /^(.+):(\d{1,5})$/.exec(input.trim())
        const port = match === null ? NaN : Number(match[2])
        return match !== null && port >= 1 && port <= 65535
          ? Effect.succeed(new RunnerAddress({ host: match[1]!.replace(/^\[(.*)\]$/, "$1"), port }))
          : Effect.fail(new SchemaIssue.InvalidValue({ message: `expected host:port, got "${input}"` }))
      },
      encode: (address) => Effect.succeed(`${address.host}:${address.port}`)
    })
  )
)

/** Parses `host:port`. */
export const parseRunnerAddress = Schema.decodeResult(RunnerAddressFromString)

/** A `ConfigError` saying that the variable `name` is refused, and why. */
const refused = (name: string, message: string): Config.ConfigError =>
  new Config.ConfigError(
    new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.InvalidValue({ message })))
  )

/** A runner address read from config as `host:port`. */
export const runnerAddressConfig = (name: string): Config.Config<RunnerAddress> =>
  Config.String(name).pipe(
    Config.mapEffect((value) =>
      Result.match(parseRunnerAddress(value), {
        onFailure: () => Effect.fail(refused(name, `${name} must be host:port, got "${value.slice(0, 80)}"`)),
        onSuccess: Effect.succeed
      })
    )
  )

/** `GCX_DATABASE_URL`, redacted; a `ConfigError` saying it is not set when it is missing. */
export const databaseUrlConfig: Config.Config<Redacted.Redacted> = Config.option(Config.Redacted("GCX_DATABASE_URL"))
  .pipe(
    Config.mapEffect(Option.match({
      onNone: () => Effect.fail(ConfigProblem.missing("GCX_DATABASE_URL")),
      onSome: Effect.succeed
    }))
  )

/** A runner: serves its shards' workflows on `runnerAddress` and stores everything in PostgreSQL. */
export const layer = (
  options: RunnerOptions
): Layer.Layer<Services, RunnerError> =>
  Layer.merge(Outcomes.layerPublisher.pipe(Layer.provide(ClusterWorkflowEngine.layer)), Outcomes.layer).pipe(
    Layer.provideMerge(Database.withSchemaLock(
      Transport.layerRunner({
        security: options.security,
        limits: options.limits ?? ClusterSecurity.defaultLimits,
        shardingConfig: {
          ...shardingConfig,
          ...options.sharding,
          runnerAddress: Option.some(options.runnerAddress),
          runnerListenAddress: Option.fromNullishOr(options.listenAddress)
        },
        // the runner storage logs the shards it acquires and releases
        runnerStorage: Layer.orDie(ShardLog.layerSql)
      }).pipe(Layer.provideMerge(ServiceBinding.layer(options.service)))
    )),
    Layer.provideMerge(Database.layer(options.databaseUrl))
  )

/**
 * The durable quotes of a runner (`DurableQuotes.layerRunner` over `layer`), relaying the events of the
 * quotes it runs to the client-only nodes (`EventRelay.layerPublisher`). `outcomes`, built over the
 * deployment, tells the workflow's outcomes somewhere more (`DurableQuotes.withOutcomes`; the gateway's webhooks).
 */
export const layerQuotes = <E2 = never, R2 = never>(
  options: RunnerOptions,
  quotes?: DurableQuotes.RunnerOptions,
  outcomes?: Layer.Layer<never, E2, R2>
): Layer.Layer<
  Layer.Success<ReturnType<typeof DurableQuotes.layerRunner>> | Services,
  RunnerError | E2,
  ExchangeClient.ExchangeClient | CardCipher.CardCipher | Exclude<R2, Services>
> => {
  const deployment = layer(options)
  return EventRelay.layerPublisher.pipe(
    Layer.provideMerge(DurableQuotes.layerRunner(DurableQuotes.withOutcomes(deployment, outcomes), quotes)),
    Layer.provideMerge(deployment)
  )
}

/**
 * A runner from `GCX_DATABASE_URL` and `GCX_RUNNER_ADDRESS` (and `GCX_RUNNER_LISTEN`, optional), with the
 * security of `ClusterSecurity.securityConfig` and the limits of `ClusterSecurity.limitsConfig`.
 */
export const layerConfig = (
  overrides?: Partial<Omit<RunnerOptions, "databaseUrl" | "runnerAddress">>
): Layer.Layer<Services, RunnerError> =>
  Layer.unwrap(
    Config.all({
      databaseUrl: databaseUrlConfig,
      runnerAddress: runnerAddressConfig("GCX_RUNNER_ADDRESS"),
      listenAddress: Config.option(runnerAddressConfig("GCX_RUNNER_LISTEN")),
      security: ClusterSecurity.securityConfig(),
      limits: ClusterSecurity.limitsConfig
    }).pipe(
      Config.map(({ databaseUrl, limits, listenAddress, runnerAddress, security }) =>
        layer({
          databaseUrl,
          runnerAddress,
          listenAddress: overrides?.listenAddress ?? Option.getOrUndefined(listenAddress),
          sharding: overrides?.sharding,
          security: overrides?.security ?? security,
          limits: overrides?.limits ?? limits,
          service: overrides?.service
        })
      )
    )
  )

/** A client-only node: submits workflows and reads their results, runs none. */
export const layerClient = (
  options: ClientOptions
): Layer.Layer<Services, ClientError> =>
  Layer.merge(ClusterWorkflowEngine.layer, Outcomes.layer).pipe(
    Layer.provideMerge(Database.withSchemaLock(
      Transport.layerClient({
        security: options.security,
        limits: options.limits ?? ClusterSecurity.defaultLimits,
        shardingConfig: { ...shardingConfig, ...options.sharding, runnerAddress: Option.none() }
      }).pipe(Layer.provideMerge(ServiceBinding.layer(options.service)))
    )),
    Layer.provideMerge(Database.layer(options.databaseUrl))
  )

/** `shardingConfig`'s `shardLockExpiration`, in seconds. */
const expirationSeconds = Duration.toSeconds(Duration.fromInputUnsafe(shardingConfig.shardLockExpiration ?? 0))

/**
 * How many runners share the database now: the healthy ones whose heartbeat is younger than
 * `shardingConfig`'s `shardLockExpiration` (gcx's setting, not a node's override), as the runners
 * count each other. A client-only node that
 * finds none can say so: its quotes wait until a runner starts.
 */
export const liveRunners: Effect.Effect<number, SqlError.SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ readonly live: number | string }>`SELECT count(*) AS live FROM cluster_runners
      WHERE healthy AND last_heartbeat > now() - make_interval(secs => ${expirationSeconds})`.pipe(
      Effect.map((rows) => Number(rows[0]?.live ?? 0))
    )
)

/** A client-only node from `GCX_DATABASE_URL`, with the security and limits of `ClusterSecurity`'s configs. */
export const layerClientConfig = (
  overrides?: Partial<Omit<ClientOptions, "databaseUrl">>
): Layer.Layer<Services, ClientError> =>
  Layer.unwrap(
    Config.all({
      databaseUrl: databaseUrlConfig,
      security: ClusterSecurity.securityConfig(),
      limits: ClusterSecurity.limitsConfig
    }).pipe(
      Config.map(({ databaseUrl, limits, security }) =>
        layerClient({
          databaseUrl,
          sharding: overrides?.sharding,
          security: overrides?.security ?? security,
          limits: overrides?.limits ?? limits,
          service: overrides?.service
        })
      )
    )
  )
