/** The Prometheus scrape endpoint: `/metrics` served from a `PrometheusExporter` on a port of its own. */
import type { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** The address of the Prometheus scrape endpoint, when one is served. */
export class PrometheusEndpoint extends Context.Service<
  PrometheusEndpoint,
  { readonly url: Option.Option<string> }
>()("@gcx/http/Telemetry/PrometheusEndpoint") {}

/** Serves `exporter`'s scrape at `/metrics` on `host` until the scope closes; succeeds with its address. */
export const servePrometheus = (exporter: PrometheusExporter, port: number, host: string) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.callback<http.Server>((resume) => {
        const server = http.createServer((request, response) => {
          if (request.url === "/metrics" || request.url?.startsWith("/metrics?")) {
            exporter.getMetricsRequestHandler(request, response)
          } else {
            response.statusCode = 404
            response.end()
          }
        })
        server.once("error", (error) => resume(Effect.die(error)))
        server.listen(port, host, () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    ),
    (server) => `http://${host.includes(":") ? `[${host}]` : host}:${(server.address() as AddressInfo).port}/metrics`
  )
