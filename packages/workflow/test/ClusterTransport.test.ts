/**
 * The cluster's transport on real sockets in this process: the TLS server of a runner (mutual
 * authentication, handshake timeout) and the frame guard (bounded, stalled and malformed frames), with
 * `gcx.cluster.connections.refused` counting every refusal.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, Metric } from "effect"
import * as Net from "node:net"
import * as Tls from "node:tls"
import * as ClusterSecurity from "../src/ClusterSecurity.js"
import * as Frames from "../src/internal/cluster/frames.js"
import * as RefusalLog from "../src/internal/cluster/refusalLog.js"
import * as TlsServer from "../src/internal/cluster/tlsServer.js"
import * as Certificates from "./utils/certificates.js"

/** A frame as SchemaBinary writes it: uvarint length, then the body. */
const frame = (length: number, bodyBytes = length): Uint8Array => {
  const header: Array<number> = []
  let n = length
  while (n >= 0x80) {
    header.push((n & 0x7F) | 0x80)
    n = Math.floor(n / 128)
  }
  header.push(n)
  return Buffer.concat([Buffer.from(header), Buffer.alloc(bodyBytes, 7)])
}

describe("frame guard", () => {
  it("reads frames split anywhere, refuses a length over the bound before its body, and a zero length", () => {
    const guard = Frames.make(1024)
    const bytes = Buffer.concat([frame(300), frame(1), frame(1024)])
    for (let i = 0; i < bytes.length; i += 7) {
      expect(guard.feed(bytes.subarray(i, Math.min(bytes.length, i + 7)))).toBeUndefined()
    }
    expect(guard.partial()).toBe(false)
    expect(guard.feed(frame(500, 10))).toBeUndefined()
    expect(guard.partial()).toBe(true)
    expect(Frames.make(1024).feed(frame(1025, 0))).toBe("frame_too_large")
    expect(Frames.make(1024).feed(frame(15 * 1024 * 1024, 0))).toBe("frame_too_large")
    expect(Frames.make(1024).feed(Buffer.from([0]))).toBe("malformed_frame")
    expect(Frames.make(2 ** 40).feed(Buffer.alloc(9, 0x80))).toBe("malformed_frame")
  })
})

const refused = (reason: ClusterSecurity.RefusalReason) =>
  Metric.value(ClusterSecurity.connectionsRefusedFamily({ reason })).pipe(Effect.map((state) => state.count))

/** Resolves when `socket` closes, with what it had received. */
const closed = (socket: Net.Socket) =>
  Effect.callback<{ readonly received: number }>((resume) => {
    let received = 0
    socket.on("data", (chunk: Buffer) => received += chunk.length)
    socket.on("error", () => undefined)
    socket.once("close", () => resume(Effect.succeed({ received })))
  })

const cluster = Certificates.make("cluster")
const stranger = Certificates.make("stranger")

/** A runner's TLS server with the frame guard, whose handler echoes 1 byte per complete chunk read. */
const server = Effect.gen(function*() {
  const tls = yield* TlsServer.make({
    host: "127.0.0.1",
    port: 0,
    secure: { ca: cluster.ca, cert: cluster.cert, key: cluster.key },
    handshakeTimeout: "500 millis",
    onRefused: () => Effect.runSync(ClusterSecurity.recordRefused("handshake"))
  })
  const read = { chunks: 0 }
  yield* Effect.forkScoped(tls.run((socket) =>
    Effect.gen(function*() {
      const guarded = Frames.guard(socket, {
        maxFrameBytes: 1024,
        stallTimeout: "300 millis",
        onRefused: ClusterSecurity.recordRefused
      })
      const { pull } = yield* guarded.reader
      const writer = yield* guarded.writer
      while (true) {
        yield* pull
        read.chunks++
        yield* writer.write(new Uint8Array([1]))
      }
    }).pipe(Effect.scoped)
  ))
  const address = tls.address as { readonly port: number }
  return { port: address.port, read }
})

const connectTls = (port: number, certificates: Certificates.Certificates) =>
  Effect.callback<Tls.TLSSocket>((resume) => {
    const socket: Tls.TLSSocket = Tls.connect({
      host: "127.0.0.1",
      port,
      ca: cluster.ca,
      cert: certificates.cert,
      key: certificates.key,
      checkServerIdentity: () => undefined
    })
    socket.on("error", () => undefined)
    socket.once("secureConnect", () => resume(Effect.succeed(socket)))
    socket.once("close", () => resume(Effect.succeed(socket)))
  })

describe("cluster TLS server", () => {
  it.live("a node of the cluster's CA is served; plain TCP, another CA and a silent peer are closed unread", () =>
    Effect.gen(function*() {
      const { port, read } = yield* server
      const before = yield* refused("handshake")

      // the cluster's certificate: a complete frame is read and answered
      const member = yield* connectTls(port, cluster)
      const answer = Effect.callback<number>((resume) => {
        member.once("data", (chunk: Buffer) => resume(Effect.succeed(chunk.length)))
      })
      member.write(frame(10))
      expect(yield* answer).toBe(1)
      member.destroy()

      // no credentials: RPC frames on plain TCP
      const plain = Net.connect({ host: "127.0.0.1", port })
      const plainClosed = closed(plain)
      plain.write(Buffer.concat([frame(10), frame(1000)]))
      // a TLS server answers RPC bytes with at most an alert: never a frame
      expect((yield* plainClosed).received).toBeLessThan(10)

      // wrong credentials: a certificate of another CA
      const wrong = yield* connectTls(port, stranger)
      const wrongClosed = closed(wrong)
      if (!wrong.destroyed) wrong.write(frame(10))
      yield* wrongClosed

      // a peer that opens and says nothing: closed after the handshake timeout
      const silent = Net.connect({ host: "127.0.0.1", port })
      const started = Date.now()
      yield* closed(silent)
      expect(Date.now() - started).toBeGreaterThanOrEqual(400)

      expect(read.chunks).toBe(1)
      expect((yield* refused("handshake")) - before).toBe(3)
    }).pipe(Effect.scoped))

  it.live("a refused handshake is warned of, once a minute per peer, with its address and Node's code", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logged = Logger.layer([Logger.make((options) => lines.push(Logger.formatJson.log(options)))])
      const refusals = RefusalLog.make(yield* Effect.context<never>().pipe(Effect.provide(logged)))
      const tls = yield* TlsServer.make({
        host: "127.0.0.1",
        port: 0,
        secure: { ca: cluster.ca, cert: cluster.cert, key: cluster.key },
        handshakeTimeout: "500 millis",
        onRefused: (error, peer) => refusals.refused(peer, (error as { readonly code?: string }).code)
      })
      yield* Effect.forkScoped(tls.run(() => Effect.void))
      const port = (tls.address as { readonly port: number }).port
      // a node of another CA, twice: one warning
      for (let i = 0; i < 2; i++) yield* closed(yield* connectTls(port, stranger))
      yield* Effect.sleep("100 millis")
      const refused = lines.filter((line) => line.includes("refused a cluster connection from 127.0.0.1"))
      expect(refused).toHaveLength(1)
      expect(refused[0]).toMatch(/its TLS handshake failed \((?:ERR_SSL|ECONNRESET)[A-Z_]*/)
      expect(refused[0]).toContain("GCX_RUNNER_TLS_*")
      // the other side: a node whose connection to a runner fails to authenticate names the runner
      yield* refusals.unauthenticated("127.0.0.1:34431", "UNABLE_TO_VERIFY_LEAF_SIGNATURE").pipe(Effect.provide(logged))
      expect(lines.at(-1)).toContain(
        "cannot authenticate the runner at 127.0.0.1:34431 (UNABLE_TO_VERIFY_LEAF_SIGNATURE)"
      )
      // no certificate content in any line
      for (const line of lines) expect(line).not.toContain("BEGIN")
      expect(RefusalLog.tlsCodeOf({ reason: { cause: { code: "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA" } } }))
        .toBe("ERR_SSL_TLSV1_ALERT_UNKNOWN_CA")
      expect(RefusalLog.tlsCodeOf({ reason: { cause: { code: "ECONNREFUSED" } } })).toBeUndefined()
    }).pipe(Effect.scoped))

  it.live("frames over the bound, malformed or stalled close an authenticated connection", () =>
    Effect.gen(function*() {
      const { port } = yield* server
      const counts = Effect.all([refused("frame_too_large"), refused("stalled_frame"), refused("malformed_frame")])
      const before = yield* counts

      const big = yield* connectTls(port, cluster)
      const bigClosed = closed(big)
      big.write(frame(15 * 1024 * 1024, 64 * 1024))
      yield* bigClosed

      const stalled = yield* connectTls(port, cluster)
      const stalledClosed = closed(stalled)
      stalled.write(frame(1000, 500))
      const started = Date.now()
      yield* stalledClosed
      expect(Date.now() - started).toBeGreaterThanOrEqual(250)

      const malformed = yield* connectTls(port, cluster)
      const malformedClosed = closed(malformed)
      malformed.write(Buffer.from([0, 0, 0]))
      yield* malformedClosed

      const after = yield* counts
      expect(after.map((count, i) => count - before[i]!)).toEqual([1, 1, 1])
    }).pipe(Effect.scoped))
})

describe("cluster security settings", () => {
  it.effect("loopback addresses", () =>
    Effect.sync(() => {
      expect(["127.0.0.1", "127.8.0.1", "::1", "localhost"].every(ClusterSecurity.isLoopback)).toBe(true)
      expect(["0.0.0.0", "10.0.0.1", "::", "example.com"].some(ClusterSecurity.isLoopback)).toBe(false)
    }))
})
