/**
 * The cluster's sharding over authenticated, bounded sockets: `NodeClusterSocket.layer`'s composition
 * (socket runner, ping health checks, SQL storage, SchemaBinary serialization) with gcx's transport:
 * mutual TLS (`tlsServer`, `NodeSocket.makeTls`) or plain TCP on loopback only, and every socket, in
 * and out, behind the frame guard (`frames`).
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import type { RunnerAddress } from "effect/cluster/RunnerAddress"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import type * as RunnerStorage from "effect/cluster/RunnerStorage"
import type * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import type * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as RpcClient from "effect/rpc/RpcClient"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import * as Socket from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"
import type * as SqlClient from "effect/sql/SqlClient"
import * as ClusterSecurity from "../../ClusterSecurity.js"
import * as Frames from "./frames.js"
import * as RefusalLog from "./refusalLog.js"
import * as TlsServer from "./tlsServer.js"

/** The transport of a node: its security and the bounds of its connections. */
export interface Options {
  readonly security: ClusterSecurity.Security
  readonly limits: ClusterSecurity.Limits
}

const guard = (options: Options) => (socket: Socket.Socket): Socket.Socket =>
  Frames.guard(socket, {
    maxFrameBytes: options.limits.maxFrameBytes,
    stallTimeout: options.limits.stallTimeout,
    onRefused: ClusterSecurity.recordRefused
  })

const refusedAddress = (address: RunnerAddress) =>
  new Socket.SocketError({
    reason: new Socket.SocketOpenError({
      kind: "Unknown",
      cause: new Error(`${address.host}:${address.port} is not a loopback address (insecure loopback transport)`)
    })
  })

/** A socket to the runner at `address`: TLS with this node's certificate, or plain TCP to loopback only. */
const connect = (options: Options, address: RunnerAddress): Effect.Effect<Socket.Socket, Socket.SocketError> => {
  const security = options.security
  if (security._tag === "InsecureLoopback") {
    return ClusterSecurity.isLoopback(address.host)
      ? NodeSocket.makeNet({ openTimeout: 1000, host: address.host, port: address.port })
      : Effect.fail(refusedAddress(address))
  }
  return NodeSocket.makeTls({
    // a TLS 1.3 handshake is one more round trip and two signatures: more than TCP's 1 s on a busy machine
    openTimeout: 5000,
    host: address.host,
    port: address.port,
    ca: security.ca,
    cert: security.cert,
    key: Redacted.value(security.key),
    minVersion: "TLSv1.3",
    // the CA is the cluster's own: any certificate it signed is a member, whatever its host name
    checkServerIdentity: () => undefined
  })
}

/** The outgoing side: RPC clients to the other runners over guarded sockets. */
const layerClientProtocol = (options: Options): Layer.Layer<
  Runners.RpcClientProtocol,
  never,
  RpcSerialization.RpcSerialization
> =>
  Layer.effect(Runners.RpcClientProtocol)(Effect.gen(function*() {
    const serialization = yield* RpcSerialization.RpcSerialization
    const refusals = RefusalLog.make(yield* Effect.context<never>())
    return {
      codecFor: serialization.codecFor,
      make: Effect.fnUntraced(function*(address) {
        const socket = yield* connect(options, address).pipe(
          Effect.tapError((error) => {
            const code = RefusalLog.tlsCodeOf(error)
            return code === undefined ? Effect.void : refusals.unauthenticated(`${address.host}:${address.port}`, code)
          })
        )
        return yield* RpcClient.makeProtocolSocket().pipe(
          Effect.provideService(Socket.Socket, guard(options)(socket)),
          Effect.provideService(RpcSerialization.RpcSerialization, serialization)
        )
      }, Effect.orDie)
    }
  }))

const listenError = (message: string) =>
  new SocketServer.SocketServerError({ reason: new SocketServer.SocketServerOpenError({ cause: new Error(message) }) })

/** The incoming side: the runner's server (TLS, or plain TCP on loopback), each connection guarded. */
const layerSocketServer = (options: Options): Layer.Layer<
  SocketServer.SocketServer,
  SocketServer.SocketServerError,
  ShardingConfig.ShardingConfig
> =>
  Layer.effect(SocketServer.SocketServer)(Effect.gen(function*() {
    const config = yield* ShardingConfig.ShardingConfig
    const listen = Option.getOrUndefined(Option.orElse(config.runnerListenAddress, () => config.runnerAddress))
    if (listen === undefined) return yield* Effect.fail(listenError("no address to listen on"))
    const security = options.security
    const refusals = RefusalLog.make(yield* Effect.context<never>())
    const server = security._tag === "Tls"
      ? yield* TlsServer.make({
        host: listen.host,
        port: listen.port,
        secure: { ca: security.ca, cert: security.cert, key: Redacted.value(security.key) },
        handshakeTimeout: options.limits.handshakeTimeout,
        onRefused: (error, peer) => {
          Effect.runSync(ClusterSecurity.recordRefused("handshake"))
          refusals.refused(peer, (error as { readonly code?: string }).code)
        }
      })
      : ClusterSecurity.isLoopback(listen.host)
      ? yield* NodeSocketServer.make({ host: listen.host, port: listen.port })
      : yield* Effect.fail(listenError(
        `${listen.host} is not a loopback address: without TLS certificates a runner listens on loopback only`
      ))
    return SocketServer.SocketServer.of({
      address: server.address,
      run: (handler) => server.run((socket) => handler(guard(options)(socket)))
    })
  }))

/** The settings of a node's sharding. */
export interface LayerOptions extends Options {
  readonly shardingConfig: Partial<ShardingConfig.ShardingConfig["Service"]>
  /** The runner storage; default `SqlRunnerStorage.layer`. */
  readonly runnerStorage?:
    | Layer.Layer<RunnerStorage.RunnerStorage, never, SqlClient.SqlClient | ShardingConfig.ShardingConfig>
    | undefined
}

/** Storage (SQL), config and serialization under a node's sharding. */
const provideStorage = <A, E>(options: LayerOptions) =>
(
  runner: Layer.Layer<
    A,
    E,
    | MessageStorage.MessageStorage
    | RunnerStorage.RunnerStorage
    | ShardingConfig.ShardingConfig
    | RpcSerialization.RpcSerialization
  >
) => {
  const config = ShardingConfig.layerFromEnv(options.shardingConfig)
  const storage = Layer.merge(
    SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest)),
    options.runnerStorage ?? Layer.orDie(SqlRunnerStorage.layer)
  ).pipe(Layer.provide(config))
  return runner.pipe(
    Layer.provideMerge(storage),
    Layer.provide(config),
    Layer.provide(RpcSerialization.layerSchemaBinary({ maxFrameSize: options.limits.maxFrameBytes }))
  )
}

/** The sharding of a runner on SQL storage over gcx's transport: it serves its shards on its address. */
export const layerRunner = (options: LayerOptions): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage,
  SocketServer.SocketServerError | Config.ConfigError,
  SqlClient.SqlClient
> => {
  const clientProtocol = layerClientProtocol(options)
  return SocketRunner.layer.pipe(
    Layer.provide([layerSocketServer(options), clientProtocol]),
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))),
    provideStorage(options)
  )
}

/** The sharding of a client-only node on SQL storage over gcx's transport: it sends, serves nothing. */
export const layerClient = (options: LayerOptions): Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage,
  Config.ConfigError,
  SqlClient.SqlClient
> => SocketRunner.layerClientOnly.pipe(Layer.provide(layerClientProtocol(options)), provideStorage(options))
