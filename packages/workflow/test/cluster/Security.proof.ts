/**
 * The runner port under attack (`pnpm test:cluster`): a real runner process with the cluster's TLS
 * certificates on a throwaway PostgreSQL, the sandbox in its own process, this process as a client-only
 * node with the same CA, and a raw client of the runner protocol (`raw-client.ts`).
 *
 * - With no credentials (plain TCP) and with wrong ones (a certificate of another CA), `ping`, `read`
 *   (replay a finished quote's `run` with a fake card), `poison` (a `run` with a fake card under an unused
 *   requestId) and `write` (a message to persist) are all refused: no answer, the connection closed, each
 *   counted by the runner; the rows of `cluster_messages` are unchanged; the genuine quote later submitted
 *   under the attacked requestId completes. With the cluster's certificate the same raw client is answered
 *   (the requests are the protocol's own; effect/cluster 4.1 answers them unpersisted, `persisted: false`:
 *   a persisted request is read from storage by the runner, which the sender must have written).
 * - A drip: 3 × 15 MiB of partial frames from a certificate holder cost the runner under 0.3 s of CPU
 *   (read in `/proc/<pid>/stat`), and it keeps its shard locks.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as Context from "effect/Context"
import * as SqlClient from "effect/sql/SqlClient"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Tls from "node:tls"
import { CardCipher, DurableQuotes } from "../../src/index.js"
import * as Runner from "../../src/Runner.js"
import * as Certificates from "../utils/certificates.js"
import * as TestPg from "../utils/postgres.js"
import * as Processes from "./processes.js"
import * as RawClient from "./raw-client.js"

const partner = {
  clientId: "security-partner",
  clientSecret: "SECRET-SENTINEL-security-4d2a",
  apiKey: "APIKEY-SENTINEL-security-77b1",
  creatorId: 7102
}
const dataKey = CardCipher.generateKey()
const cluster = Certificates.make("cluster")
const stranger = Certificates.make("stranger")
const card = (n: number) => ({
  cardNumber: `49291000000${String(10_000 + n)}`,
  pinNumber: "1234",
  productLineId: "1000"
})

/** CPU seconds (user + system) of process `pid` so far. */
const cpuSeconds = (pid: number): number => {
  const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** Writes `total` bytes on a fresh TLS connection of the cluster, as frames of `frameBytes` left partial. */
const drip = (port: number, frameBytes: number, total: number) =>
  Effect.callback<number>((resume) => {
    const socket = Tls.connect({
      host: "127.0.0.1",
      port,
      ca: cluster.ca,
      cert: cluster.cert,
      key: cluster.key,
      checkServerIdentity: () => undefined
    })
    let sent = 0
    const chunk = Buffer.alloc(64 * 1024, 0x41)
    socket.on("error", () => undefined)
    socket.once("close", () => resume(Effect.succeed(sent)))
    socket.once("secureConnect", () => {
      // the frame's length, then never all of its body
      const header: Array<number> = []
      for (let n = frameBytes;; n = Math.floor(n / 128)) {
        if (n < 0x80) {
          header.push(n)
          break
        }
        header.push((n & 0x7F) | 0x80)
      }
      socket.write(Buffer.from(header))
      const pump = () => {
        while (sent < total && !socket.destroyed) {
          const n = Math.min(chunk.length, total - sent, frameBytes - 1 - sent)
          if (n <= 0) return
          sent += n
          if (!socket.write(chunk.subarray(0, n))) return socket.once("drain", pump)
        }
      }
      pump()
    })
  })

describe("cluster security", () => {
  layer(TestPg.layer(), { excludeTestServices: true, timeout: 120_000 })("a runner with TLS certificates", (it) => {
    it.effect(
      "unauthenticated nodes are refused before any frame is read; frames are bounded",
      () =>
        Effect.gen(function*() {
          const db = yield* TestPg.PgTestDatabase
          const endpoint = yield* Processes.sandbox({ timeScale: 0.2, faults: [], partners: [partner] })
          const port = yield* TestPg.freePort
          let refused = 0
          const runner = yield* Effect.promise(() =>
            Processes.runner(
              0,
              port,
              {
                GCX_DATABASE_URL: db.urlString,
                GCX_SANDBOX: JSON.stringify(endpoint),
                GCX_PARTNER: JSON.stringify(partner),
                GCX_DATA_KEY: dataKey,
                ...cluster.env
              },
              () => undefined,
              (line) => {
                if (line.startsWith("REFUSED ")) refused = Number(line.slice(8))
              }
            )
          )
          yield* Effect.addFinalizer(() => Processes.stop(runner, 5_000))

          const client = yield* Layer.build(
            DurableQuotes.layer().pipe(
              Layer.provideMerge(Runner.layerClient({ databaseUrl: db.url, security: cluster.security })),
              Layer.provide(CardCipher.layer(dataKey))
            )
          )
          const api = Context.get(client, DurableQuotes.DurableQuotes)
          const sql = Context.get(client, SqlClient.SqlClient)
          const messages = sql<{ id: string }>`SELECT CAST(id AS TEXT) AS id FROM cluster_messages ORDER BY id`
          const shardLocks = sql<{ n: number }>`
            SELECT CAST(count(*) AS INT) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted`

          // a genuine quote over TLS: its requestId is the one the read attack replays
          const known = `security-known-${Date.now().toString(36)}`
          const attacked = `security-attacked-${Date.now().toString(36)}`
          const first = yield* api.execute(card(1), { requestId: known })
          expect(first.transactionId).toBeTruthy()
          const rowsBefore = yield* messages
          // the attacker is given the execution id recorded for the known requestId (the worst case)
          const [recorded] = yield* sql<{ execution_id: string }>`
            SELECT execution_id FROM gcx_request_ids WHERE request_id = ${known}`
          const knownExecution = recorded!.execution_id

          // the four attacks, with no credentials and with a certificate of another CA
          type Client = Effect.Success<ReturnType<typeof RawClient.make>>
          const calls: ReadonlyArray<readonly [string, (c: Client) => Effect.Effect<unknown, unknown>]> = [
            ["ping", (c) => c.Ping()],
            ["read", (c) => c.Effect({ request: RawClient.runQuote(knownExecution, known), persisted: false })],
            ["poison", (c) =>
              c.Effect({
                request: RawClient.runQuote(Crypto.randomBytes(16).toString("hex"), attacked),
                persisted: false
              })],
            ["write", (c) => c.Effect({ request: RawClient.writeRow(), persisted: false })]
          ]
          const attack = (credentials: RawClient.Credentials) =>
            Effect.forEach(calls, ([name, call]) =>
              RawClient.make(port, credentials).pipe(
                Effect.flatMap(call),
                Effect.timeout("3 seconds"),
                Effect.scoped,
                Effect.exit,
                Effect.map((exit) => [name, Exit.isSuccess(exit) ? "answered" : "refused"] as const)
              ))
          const refusedBefore = refused
          const noCredentials = yield* attack("none")
          const wrongCredentials = yield* attack(stranger)
          const expected = ["ping", "read", "poison", "write"].map((name) => [name, "refused"])
          expect(noCredentials).toEqual(expected)
          expect(wrongCredentials).toEqual(expected)
          yield* Effect.sleep("500 millis")
          expect(refused - refusedBefore).toBeGreaterThanOrEqual(8)
          expect(yield* messages).toEqual(rowsBefore)

          // the genuine quote under the requestId attacked before completes
          const genuine = yield* api.execute(card(2), { requestId: attacked })
          expect(genuine.transactionId).toBeTruthy()

          // the drip: 3 × 15 MiB of partial frames, from a holder of the cluster's certificate
          const locksBefore = (yield* shardLocks)[0]!.n
          const pid = runner.process.pid!
          const idleFrom = cpuSeconds(pid)
          yield* Effect.sleep("2 seconds")
          const idle = cpuSeconds(pid) - idleFrom
          const from = cpuSeconds(pid)
          const started = Date.now()
          const mib = 1024 * 1024
          // frames of 15 MiB: refused at their length; frames within the bound: refused when they stall
          const big = yield* Effect.forEach([0, 1, 2], () => drip(port, 15 * mib, 15 * mib), { concurrency: 3 })
          const bounded = yield* Effect.forEach([0, 1, 2], () => drip(port, mib, 15 * mib), { concurrency: 3 })
          const seconds = (Date.now() - started) / 1000
          const cost = cpuSeconds(pid) - from
          console.log(
            `drip: 3 × 15 MiB claimed (${big.map((n) => (n / mib).toFixed(2))} MiB sent before the close) and 3 ` +
              `partial 1 MiB frames (${bounded.map((n) => (n / mib).toFixed(2))} MiB, closed after the stall ` +
              `timeout): runner CPU ${cost.toFixed(3)} s over ${seconds.toFixed(1)} s (idle: ${
                (idle / 2).toFixed(3)
              } s/s)`
          )
          // what the drip cost beyond the runner's own idle work (heartbeats, storage polls) over the same time
          expect(cost - (idle / 2) * seconds).toBeLessThan(0.3)
          expect((yield* shardLocks)[0]!.n).toBe(locksBefore)
          expect(runner.stderr()).not.toMatch(/unhealthy|lost/i)
          const after = yield* api.execute(card(3))
          expect(after.transactionId).toBeTruthy()

          // the same raw client with the cluster's certificate is answered (on a runner without
          // authentication, as gcx's was, these four succeed): the requests are the protocol's own
          expect(yield* attack(cluster)).toEqual(expected.map(([name]) => [name, "answered"]))
        }).pipe(Effect.scoped),
      5 * 60_000
    )
  })
})
