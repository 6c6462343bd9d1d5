/**
 * What makes a failover visible in a runner's log: the shards it acquires and releases, at INFO, as
 * `acquired 150 shards shards=default:1-150`. effect/cluster 4.1 publishes no event for them (its
 * `Sharding` keeps its shard sets private and logs them at DEBUG only), but every acquisition and
 * release goes through the `RunnerStorage` locks: `decorate` wraps that service. Releases come one
 * shard at a time (one fiber per shard): those of 100 ms are logged together.
 */
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import type * as ShardId from "effect/cluster/ShardId"
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"

/** Shard ids in short: `default:1-4,7 other:2`, each group's ids in ranges. */
export const ranges = (shards: Iterable<{ readonly group: string; readonly id: number }>): string => {
  const byGroup = new Map<string, Array<number>>()
  for (const { group, id } of shards) byGroup.set(group, [...(byGroup.get(group) ?? []), id])
  return [...byGroup].map(([group, ids]) => {
    const sorted = [...new Set(ids)].sort((a, b) => a - b)
    const parts: Array<string> = []
    for (let i = 0; i < sorted.length; i++) {
      const start = sorted[i]!
      while (i + 1 < sorted.length && sorted[i + 1] === sorted[i]! + 1) i++
      parts.push(start === sorted[i] ? `${start}` : `${start}-${sorted[i]}`)
    }
    return `${group}:${parts.join(",")}`
  }).join(" ")
}

const logShards = (verb: string, shards: ReadonlyArray<ShardId.ShardId>) =>
  Effect.logInfo(`${verb} ${shards.length} shard${shards.length === 1 ? "" : "s"}`).pipe(
    Effect.annotateLogs({ shards: ranges(shards) })
  )

/** `storage`, logging at INFO the shards this runner acquires and releases (see the module notes). */
export const decorate = (
  storage: RunnerStorage.RunnerStorage["Service"]
): Effect.Effect<RunnerStorage.RunnerStorage["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    let released: Array<ShardId.ShardId> = []
    const logReleased = Effect.suspend(() => {
      const shards = released
      released = []
      return shards.length === 0 ? Effect.void : logShards("released", shards)
    })
    const flush = Effect.delay(logReleased, "100 millis")
    // the releases of a runner that stops come last: logged when its storage closes, if no flush ran
    yield* Effect.addFinalizer(() => logReleased)
    return RunnerStorage.RunnerStorage.of({
      ...storage,
      acquire: (address, shardIds) =>
        Effect.tap(
          storage.acquire(address, shardIds),
          (acquired) => acquired.length === 0 ? Effect.void : logShards("acquired", acquired)
        ),
      release: (address, shardId) =>
        Effect.tap(storage.release(address, shardId), () => {
          released.push(shardId)
          return released.length === 1 ? Effect.asVoid(Effect.forkIn(flush, scope)) : Effect.void
        }),
      releaseAll: (address) => Effect.tap(storage.releaseAll(address), () => Effect.logInfo("released all shards"))
    })
  })

/** The SQL runner storage of effect/cluster, logging its shards (`decorate`). */
export const layerSql: Layer.Layer<
  RunnerStorage.RunnerStorage,
  SqlError.SqlError,
  SqlClient.SqlClient | ShardingConfig.ShardingConfig
> = Layer.effect(
  RunnerStorage.RunnerStorage,
  Effect.flatMap(
    Layer.build(SqlRunnerStorage.layer),
    (context) => decorate(Context.get(context, RunnerStorage.RunnerStorage))
  )
)
