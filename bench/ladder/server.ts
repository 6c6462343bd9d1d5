/**
 * One step of the per-request cost ladder of row 5 (see bench/NOTES.md):
 * a server answering GET `/v3/exchange/quote/:transactionId`, from a bare
 * node:http server up to the sandbox itself. Prints `READY <json>` and runs
 * until killed.
 *
 * Usage: node build/server.mjs <bare|handler|router|api|sandbox> [body file]
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Sandbox } from "@gcx/sandbox"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { constTrue } from "effect/Function"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as Http from "node:http"

const step = process.argv[2] ?? "bare"
// The answer: the JSON in the file named by the second argument (row 5 passes the sandbox's own answer), or a stand-in.
const body = process.argv[3] === undefined
  ? JSON.stringify({ status: "Completed", transactionId: "x".repeat(32), padding: "y".repeat(300) })
  : fs.readFileSync(process.argv[3], "utf8")
const path = "/v3/exchange/quote/:transactionId"
const ready = (info: unknown) => process.stdout.write(`READY ${JSON.stringify(info)}\n`)
const constant = () => HttpServerResponse.text(body, { contentType: "application/json" })

class Caller extends Context.Service<Caller, { readonly partner: string }>()("@gcx/bench/ladder/Caller") {}
class Authorization extends HttpApiMiddleware.Service<Authorization, {
  provides: Caller
  requires: never
}>()("@gcx/bench/ladder/Authorization", {
  security: { bearer: HttpApiSecurity.bearer }
}) {}
const Api = HttpApi.make("ladder").add(
  HttpApiGroup.make("exchange").add(
    HttpApiEndpoint.get("getTransaction", path, {
      params: { transactionId: Schema.String },
      success: Schema.Unknown
    })
  ).middleware(Authorization)
)
const ApiLive = HttpApiBuilder.layer(Api).pipe(
  Layer.provide(
    HttpApiBuilder.group(
      Api,
      "exchange",
      (handlers) => handlers.handleRaw("getTransaction", () => Effect.as(Caller, constant()))
    )
  ),
  Layer.provide(
    Layer.succeed(
      Authorization,
      Authorization.of({ bearer: (httpEffect) => Effect.provideService(httpEffect, Caller, { partner: "p" }) })
    )
  )
)

/** Serves `app` like the sandbox does: node server on port 0, no tracer, no request logger. */
const serve = <E, R>(layer: Layer.Layer<never, E, R>) => {
  const server = Http.createServer()
  return layer.pipe(
    Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" })),
    Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen, constTrue)),
    Layer.tap(() => Effect.sync(() => ready({ port: (server.address() as { port: number }).port })))
  )
}

/** The router's routes served on the node server, as the sandbox serves its own. */
const serveRouter = <E, R>(routes: Layer.Layer<never, E, R>) =>
  serve(HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }))

if (step === "bare") {
  const bytes = Buffer.from(body)
  const server = Http.createServer((request, response) => {
    request.resume()
    request.once("end", () => {
      response.writeHead(200, { "content-type": "application/json", "content-length": bytes.length })
      response.end(bytes)
    })
  })
  server.listen(0, "127.0.0.1", () => ready({ port: (server.address() as { port: number }).port }))
} else if (step === "handler") {
  NodeRuntime.runMain(Layer.launch(serve(HttpServer.serve(Effect.sync(constant)))))
} else if (step === "router") {
  NodeRuntime.runMain(Layer.launch(serveRouter(HttpRouter.add("GET", path, Effect.sync(constant)))))
} else if (step === "api") {
  NodeRuntime.runMain(Layer.launch(serveRouter(ApiLive)))
} else {
  NodeRuntime.runMain(
    Effect.gen(function*() {
      const sandbox = yield* Sandbox.make({ logLevel: "None", timeScale: 1 })
      ready(sandbox)
      return yield* Effect.never
    }).pipe(Effect.scoped)
  )
}
