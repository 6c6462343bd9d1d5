/** Local `node:http` servers for the reliability suite's hostile services. */
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"

/** A server on 127.0.0.1 answering with `answer(request, body, response)`, closed with the scope; its URL. */
export const listen = (
  answer: (request: Http.IncomingMessage, body: string, response: Http.ServerResponse) => void
) =>
  Effect.acquireRelease(
    Effect.callback<Http.Server>((resume) => {
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => answer(request, Buffer.concat(chunks).toString("utf8"), response))
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`))
