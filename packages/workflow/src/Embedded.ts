/**
 * The embedded deployment: one process, the cluster's `SingleRunner` over
 * SQLite in a file (default `.gcx/gcx.db`), with the cluster's workflow
 * engine. No server to run; quotes in flight survive a restart of the
 * process, which picks them up from the file.
 *
 * One process per file: the single runner owns every shard of its database.
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import type * as MessageStorage from "@effect/cluster/MessageStorage"
import type * as Sharding from "@effect/cluster/Sharding"
import type * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import type * as ExchangeClient from "@gcx/http/ExchangeClient"
import type * as QuoteEvents from "@gcx/poller/QuoteEvents"
import type * as QuotePoller from "@gcx/poller/QuotePoller"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type * as CardCipher from "./CardCipher.js"
import * as DurableQuotes from "./DurableQuotes.js"

/** Where the embedded database lives unless told. */
export const defaultFilename = ".gcx/gcx.db"

/** Settings of the embedded deployment. */
export interface Options {
  /** The SQLite file; its directory is created when missing. Default `.gcx/gcx.db`. */
  readonly filename?: string | undefined
  /** Overrides of the sharding settings (see `shardingDefaults`). */
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined
}

/**
 * The sharding settings of the embedded runner:
 * - stored messages are looked for every second (not 10 s), so that a
 *   restarted process resumes its quotes quickly;
 * - a stopping process waits at most 3 s (not 15 s) for its quotes in flight:
 *   what it stops is resumed from the file by the next start.
 */
export const shardingDefaults: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  entityMessagePollInterval: Duration.seconds(1),
  entityTerminationTimeout: Duration.seconds(3)
}

/** SQLite in `filename`, its directory created first. */
export const layerSqlite = (
  filename: string = defaultFilename
): Layer.Layer<SqlClient.SqlClient, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      Fs.mkdirSync(Path.dirname(Path.resolve(filename)), { recursive: true })
      return SqliteClient.layer({ filename })
    })
  )

/** The deployment: the workflow engine of a single runner over SQLite in a file. */
export const layer = (options: Options = {}): Layer.Layer<
  WorkflowEngine | Sharding.Sharding | MessageStorage.MessageStorage | SqlClient.SqlClient,
  ConfigError.ConfigError
> =>
  ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(
      SingleRunner.layer({ runnerStorage: "memory", shardingConfig: { ...shardingDefaults, ...options.sharding } })
    ),
    Layer.provideMerge(layerSqlite(options.filename))
  )

/**
 * Durable quotes embedded: the API, the workflow, the poller and its bus over
 * the embedded deployment. Needs the exchange client and the card cipher.
 */
export const layerQuotes = (options: Options & DurableQuotes.RunnerOptions = {}): Layer.Layer<
  | DurableQuotes.DurableQuotes
  | QuotePoller.QuotePoller
  | QuoteEvents.QuoteEvents
  | WorkflowEngine
  | SqlClient.SqlClient,
  ConfigError.ConfigError | SqlError.SqlError,
  ExchangeClient.ExchangeClient | CardCipher.CardCipher
> => DurableQuotes.layerRunner(layer(options), options)
