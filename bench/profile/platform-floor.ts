/**
 * The floor of one HTTP exchange over undici, without gcx: a GET of a small
 * JSON answer from a bare `node:http` server in this process, read as text,
 * `count` times with 64 in flight, three ways:
 * - `undici`: `undici.request` and `body.text()` (what the platform wraps);
 * - `effect`: `HttpClient.execute` over `NodeHttpClient.layerUndici`, then
 *   `response.text` (what gcx's transport does under its own code);
 * - `effect-fetch`: the same over `FetchHttpClient` (global fetch);
 * - `gcx`: the same over gcx's `UndiciClient` (`@gcx/http/UndiciClient`).
 * Prints client CPU µs, Effect operations and fibers per request (the server's
 * CPU is in the figures: it runs in this process). The minimal reproduction of
 * the upstream issue text in bench/NOTES.md. With `--untraced`, the Effect
 * sides run without the platform's client span, as gcx's exchange calls do
 * (`HttpClient.TracerDisabledWhen`).
 *
 * ```sh
 * node --import tsx bench/profile/platform-floor.ts [count] [--untraced]
 * ```
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as UndiciClient from "@gcx/http/UndiciClient"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import type * as Layer from "effect/Layer"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { countOperations } from "../internal/effectCounts.js"
import { undici } from "../internal/platformUndici.js"
import { pool } from "../internal/pool.js"

const body = JSON.stringify({ transactionId: "1JXX657P9VCKN74WVFNBH75GWR", isCompleted: true, actualCardValue: 50 })

const counts = countOperations()

const measure = async (name: string, count: number, run: () => Promise<void>) => {
  for (let warm = 0; warm < 2; warm++) await run()
  const operations = counts.operations
  const fibers = counts.fibers
  const cpu = process.cpuUsage()
  await run()
  const used = process.cpuUsage(cpu)
  console.log(
    `${name.padEnd(13)} ${((used.user + used.system) / count).toFixed(1).padStart(6)} µs CPU, ` +
      `${((counts.operations - operations) / count).toFixed(1)} operations, ` +
      `${((counts.fibers - fibers) / count).toFixed(2)} fibers per request`
  )
}

const untraced = process.argv.includes("--untraced")

const effectSide = (url: string, count: number, layer: Layer.Layer<HttpClient.HttpClient>) => {
  const program = Effect.flatMap(HttpClient.HttpClient, (client) =>
    Effect.forEach(
      Array.from({ length: count }),
      () => Effect.flatMap(client.get(url), (response) => response.text),
      { concurrency: 64, discard: true }
    )).pipe(
      Effect.provide(layer),
      Effect.provideService(HttpClient.TracerDisabledWhen, () => untraced)
    )
  return () => Effect.runPromise(program)
}

const main = async () => {
  const count = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? "5000")
  const server = http.createServer((_, response) => {
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    response.end(body)
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/status`
  await measure("undici", count, () =>
    pool(count, 64, async () => {
      const answer = await undici.request(url)
      await answer.body.text()
    }))
  await measure("effect", count, effectSide(url, count, NodeHttpClient.layerUndici))
  await measure("effect-fetch", count, effectSide(url, count, FetchHttpClient.layer))
  await measure("gcx", count, effectSide(url, count, UndiciClient.layer))
  server.close()
  server.closeAllConnections()
}

void main()
