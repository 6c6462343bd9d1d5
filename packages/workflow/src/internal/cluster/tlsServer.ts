/**
 * The runner's TLS server: a `SocketServer` on `node:tls` that requires a client certificate signed by
 * the cluster's CA. A connection reaches the cluster only once its handshake has succeeded (the
 * `secureConnection` event); one whose handshake fails or outlasts `handshakeTimeout` is destroyed
 * and reported to `onRefused`, before any byte of it is read by the cluster.
 *
 * `@effect/platform-node`'s `NodeSocketServer.makeTls` does the same but gives no hook on refused
 * handshakes (it destroys them silently), hence this small server.
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as NetAddress from "effect/net/NetAddress"
import * as Scope from "effect/Scope"
import type * as Socket from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"
import type * as Net from "node:net"
import * as Tls from "node:tls"

/** Settings of the TLS server. */
export interface Options {
  readonly host: string
  readonly port: number
  readonly secure: Tls.SecureContextOptions
  readonly handshakeTimeout: Duration.Input
  /** Told of each connection refused in its handshake: Node's error, and the peer's address. */
  readonly onRefused: (error: Error, peer: string | undefined) => void
}

const openError = (cause: unknown) =>
  new SocketServer.SocketServerError({ reason: new SocketServer.SocketServerOpenError({ cause }) })

/** A TLS `SocketServer` with mutual authentication, listening for the life of the scope. */
export const make = (
  options: Options
): Effect.Effect<SocketServer.SocketServer["Service"], SocketServer.SocketServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const pending = new Set<Net.Socket>()
    let onConnection = (conn: Net.Socket) => {
      pending.add(conn)
      conn.once("close", () => pending.delete(conn))
    }
    const server = Tls.createServer({
      ...options.secure,
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: "TLSv1.3",
      handshakeTimeout: Duration.toMillis(Duration.fromInputUnsafe(options.handshakeTimeout))
    })
    // a peer that reset its connection has no address left by then: each is noted as it connects
    const peers = new WeakMap<Net.Socket, string | undefined>()
    server.on("connection", (raw: Net.Socket) => peers.set(raw, raw.remoteAddress))
    server.on("tlsClientError", (error, socket) => {
      const raw = (socket as unknown as { readonly _parent?: Net.Socket })._parent
      options.onRefused(error, socket.remoteAddress ?? (raw === undefined ? undefined : peers.get(raw)))
      socket.destroy()
    })
    server.on("secureConnection", (conn: Tls.TLSSocket) => {
      // paused until the cluster's reader takes it, so that nothing is lost
      conn.pause()
      onConnection(conn)
    })
    yield* Effect.addFinalizer(() =>
      Effect.callback<void>((resume) => {
        for (const conn of pending) conn.destroy()
        server.close(() => resume(Effect.void))
      })
    )
    yield* Effect.callback<void, SocketServer.SocketServerError>((resume) => {
      server.once("error", (error) => resume(Effect.fail(openError(error))))
      server.listen({ host: options.host, port: options.port }, () => resume(Effect.void))
    })
    const bound = server.address() as Net.AddressInfo
    const address = yield* Effect.fromResult(NetAddress.inetAddressFromIpString(bound.address, bound.port)).pipe(
      Effect.mapError(openError)
    )

    const run = Effect.fnUntraced(function*<R, E, _>(handler: (socket: Socket.Socket) => Effect.Effect<_, E, R>) {
      const scope = yield* Scope.make()
      const services = Context.omit(Scope.Scope)(yield* Effect.context<R>()) as Context.Context<R>
      onConnection = (conn) => {
        const socket = NodeSocket.fromDuplex(
          Effect.acquireRelease(
            Effect.succeed(conn),
            (conn) => Effect.sync(() => conn.destroySoon())
          )
        )
        Effect.flatMap(socket, handler).pipe(
          Effect.ignoreCause({ log: "Debug", message: "cluster connection ended" }),
          Effect.runForkWith(Context.add(services, NodeSocket.NetSocket, conn)),
          Fiber.runIn(scope)
        )
      }
      const waiting = [...pending]
      pending.clear()
      waiting.forEach(onConnection)
      return yield* Effect.never.pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
    })
    return SocketServer.SocketServer.of({ address, run })
  })
