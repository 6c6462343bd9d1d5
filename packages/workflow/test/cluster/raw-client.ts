/**
 * A raw client of the cluster's own runner protocol (`Runners.Rpcs` over SchemaBinary on a socket), as an
 * attacker on the network would write it: `Ping`, and `Effect` requests that replay a quote workflow's
 * `run` under a chosen requestId with a fake sealed card (read and poison), or that ask a runner to
 * persist a message for any entity (write). With no credentials it speaks plain TCP; with certificates,
 * TLS with them.
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Effect, Schema } from "effect"
import { EntityAddress } from "effect/cluster/EntityAddress"
import * as EntityId from "effect/cluster/EntityId"
import * as EntityType from "effect/cluster/EntityType"
import type * as Envelope from "effect/cluster/Envelope"
import * as Runners from "effect/cluster/Runners"
import * as ShardId from "effect/cluster/ShardId"
import * as Snowflake from "effect/cluster/Snowflake"
import * as Headers from "effect/http/Headers"
import * as RpcClient from "effect/rpc/RpcClient"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import * as Socket from "effect/socket/Socket"
import * as Crypto from "node:crypto"
import { CardCipher, QuoteWorkflow } from "../../src/index.js"
import type * as Certificates from "../utils/certificates.js"

/** Who the raw client claims to be: nobody (plain TCP), or the holder of these certificates. */
export type Credentials = "none" | Certificates.Certificates

/** A client of the runner protocol on `127.0.0.1:port`, for the life of the scope. */
export const make = (port: number, credentials: Credentials) =>
  Effect.gen(function*() {
    const socket = credentials === "none"
      ? yield* NodeSocket.makeNet({ host: "127.0.0.1", port, openTimeout: 1000 })
      : yield* NodeSocket.makeTls({
        host: "127.0.0.1",
        port,
        openTimeout: 1000,
        ca: credentials.ca,
        cert: credentials.cert,
        key: credentials.key,
        checkServerIdentity: () => undefined
      })
    const protocol = yield* RpcClient.makeProtocolSocket().pipe(
      Effect.provideService(Socket.Socket, socket),
      Effect.provide(RpcSerialization.layerSchemaBinary())
    )
    return yield* Effect.provideService(Runners.makeRpcClient, RpcClient.Protocol, protocol)
  })

/** The shard of an entity id, as the cluster routes it (`Sharding.getShardId`, 300 shards per group). */
const shardOf = (entityId: string, shardsPerGroup = 300) => {
  let h = 5381
  let i = entityId.length
  while (i) h = (h * 33) ^ entityId.charCodeAt(--i)
  h = (h & 0xbfffffff) | ((h >>> 1) & 0x40000000)
  return ShardId.make("default", Math.abs(h % shardsPerGroup) + 1)
}

/** The payload of the workflow entity's `run` (`ClusterWorkflowEngine`), as its runner decodes it. */
const RunPayload = Schema.Struct({
  ...QuoteWorkflow.Payload.fields,
  "~effect/cluster/ClusterWorkflowEngine/payloadParentKey": Schema.optional(Schema.Struct({
    workflowName: Schema.String,
    executionId: Schema.String,
    detached: Schema.optional(Schema.Boolean)
  }))
})
/** The `run` payload in the bytes the runner decodes (the codec of the binary serialization). */
const encodeRun = Effect.map(
  RpcSerialization.RpcSerialization,
  (serialization: RpcSerialization.RpcSerialization["Service"]) =>
    Schema.encodeSync(serialization.codecFor(RunPayload)) as (value: typeof RunPayload.Type) => Uint8Array
).pipe(Effect.provide(RpcSerialization.layerSchemaBinary()), Effect.runSync)

/** A sealed card no key of the deployment sealed. */
export const fakeCard = () =>
  new CardCipher.SealedCard({
    masked: "************0000",
    productLineId: "1000",
    sealed: `v2.${Crypto.randomBytes(48).toString("base64")}`
  })

const request = (address: EntityAddress, tag: string, payload: Uint8Array): Envelope.PartialRequest => ({
  _tag: "Request",
  requestId: Snowflake.Snowflake(BigInt(Date.now() - 1_600_000_000_000) << 22n | BigInt(Crypto.randomInt(1 << 22))),
  address,
  tag,
  payload,
  headers: Headers.empty
})

/** The workflow entity `entityId`'s `run` with a fake sealed card for `requestId`. */
const run = (entityId: string, requestId: string): Envelope.PartialRequest =>
  request(
    new EntityAddress({
      shardId: shardOf(entityId),
      entityType: EntityType.make(`Workflow/${QuoteWorkflow.name}`),
      entityId: EntityId.make(entityId)
    }),
    "run",
    encodeRun({ requestId: requestId as never, card: fakeCard() })
  )

/**
 * The quote workflow `executionId`'s `run` under `requestId` with a fake sealed card: a replay (read),
 * or a poison. gcx draws execution ids at random and records them against their requestIds
 * (`RequestIds`): the proof gives the attacker the recorded one, the worst case.
 */
export const runQuote = (executionId: string, requestId: string): Envelope.PartialRequest => run(executionId, requestId)

/** A message for an entity of the attacker's choosing, to be persisted (a row in `cluster_messages`). */
export const writeRow = (): Envelope.PartialRequest => {
  const entityId = `attacker-${Crypto.randomUUID()}`
  return run(entityId, entityId)
}
