/**
 * The server side's floor of one HTTP request, without gcx: a GET of a small
 * JSON answer, `count` times with 8 in flight from `undici.request` in this
 * process (the same client for every server, so the differences are the
 * servers'), four ways:
 * - `node`: a bare `node:http` handler;
 * - `router`: one `HttpRouter.add` route over `NodeHttpServer`;
 * - `httpapi`: an `HttpApi` endpoint with a path parameter and a success schema;
 * - `httpapi-bearer`: the same behind a bearer `HttpApiMiddleware` security
 *   middleware that provides a service (the shape of the gateway's endpoints,
 *   without any key lookup).
 * Prints this process's CPU µs per request (client and server), in rounds
 * with the servers in turn. Row 9's reproduction of what `HttpApi` costs per
 * request (bench/NOTES.md, "2026-11-29, fourth pass").
 *
 * ```sh
 * node --import tsx bench/profile/server-floor.ts [count=5000] [rounds=3]
 * ```
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { undici } from "../internal/platformUndici.js"
import { pool } from "../internal/pool.js"

const body = JSON.stringify({ id: "item", ok: true })

class User extends Context.Service<User, { readonly id: string }>()("ServerFloor/User") {}

class Bearer extends HttpApiMiddleware.Service<Bearer, { provides: User; requires: never }>()("ServerFloor/Bearer", {
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const Item = Schema.Struct({ id: Schema.String, ok: Schema.Boolean })
const get = (name: string) =>
  HttpApiEndpoint.get("get", `/${name}/:id`, { params: { id: Schema.String }, success: Item })

class Api extends HttpApi.make("floor")
  .add(HttpApiGroup.make("open").add(get("open")))
  .add(HttpApiGroup.make("secure").add(get("secure")).middleware(Bearer))
{}

const ApiLive = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([
    HttpApiBuilder.group(
      Api,
      "open",
      (handlers) => handlers.handle("get", ({ params }) => Effect.succeed({ id: params.id, ok: true }))
    ),
    HttpApiBuilder.group(Api, "secure", (handlers) =>
      handlers.handle("get", ({ params }) =>
        Effect.gen(function*() {
          yield* User
          return { id: params.id, ok: true }
        })))
  ]),
  Layer.provide(
    Layer.succeed(Bearer, Bearer.of({ bearer: (effect) => Effect.provideService(effect, User, { id: "user" }) }))
  )
)

const RouteLive = HttpRouter.add(
  "GET",
  "/route/:id",
  HttpServerResponse.text(body, { contentType: "application/json" })
)

/** An Effect server of `routes` on a free port: its base URL and how to stop it. */
const effectServer = async (routes: typeof RouteLive | typeof ApiLive) => {
  const runtime = ManagedRuntime.make(
    HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(http.createServer, { port: 0, host: "127.0.0.1" }))
    )
  )
  const address = await runtime.runPromise(Effect.gen(function*() {
    return (yield* HttpServer.HttpServer).address
  }))
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  return { base: `http://127.0.0.1:${address.port}`, stop: () => runtime.dispose() }
}

const nodeServer = async () => {
  const server = http.createServer((_, response) => {
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    response.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: async () => {
      server.closeAllConnections()
      server.close()
    }
  }
}

const main = async () => {
  const [count, rounds] = [Number(process.argv[2] ?? 5000), Number(process.argv[3] ?? 3)]
  const servers = [await nodeServer(), await effectServer(RouteLive), await effectServer(ApiLive)] as const
  try {
    const [node, router, api] = servers
    const urls = {
      node: `${node.base}/item`,
      router: `${router.base}/route/item`,
      httpapi: `${api.base}/open/item`,
      "httpapi-bearer": `${api.base}/secure/item`
    }
    const headers = { authorization: "Bearer token" }
    const run = (name: keyof typeof urls) =>
      pool(count, 8, async () => {
        const answer = await undici.request(urls[name], { headers })
        const text = await answer.body.text()
        if (!text.includes("\"ok\":true")) throw new Error(`${name}: unexpected answer ${text}`)
      })
    const names = Object.keys(urls) as Array<keyof typeof urls>
    for (const name of names) await run(name)
    for (let round = 0; round < rounds; round++) {
      const line: Array<string> = []
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const before = process.cpuUsage()
        await run(name)
        const used = process.cpuUsage(before)
        line.push(`${name} ${((used.user + used.system) / count).toFixed(1)}`)
      }
      console.log(line.join("  "))
    }
  } finally {
    for (const server of servers) await server.stop()
  }
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
