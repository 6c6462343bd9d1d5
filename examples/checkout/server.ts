/**
 * The checkout page's backend: serves the static page and proxies two calls
 * to `gcx serve`, holding the gateway's API key so that the browser never
 * sees it.
 *
 * - `POST /api/quotes` → `POST /v1/quotes`, with the Bearer key and an
 *   `Idempotency-Key` drawn here per submission (a retry of the same
 *   submission reuses it, so a dropped answer cannot submit the card twice).
 * - `GET /api/quotes/:id` → `GET /v1/quotes/:id` (the outcome).
 * - `GET /api/quotes/:id/events` → `GET /v1/quotes/:id/events`, the
 *   server-sent events passed through as they come, `Last-Event-ID` forwarded
 *   (the browser's `EventSource` sends it when it reconnects).
 *
 * Safe by default, as people copy examples: `POST /api/quotes` takes only
 * `Content-Type: application/json` (415 otherwise) and, when the browser sends
 * an `Origin`, only this page's own (403 otherwise): another site's page
 * cannot submit through it (no CORS headers either). The two `GET`s proxy only
 * the quotes this backend created (the last 10,000, in memory; 404 otherwise),
 * so a page cannot read the other quotes of the shop's key.
 *
 * Run it (Node ≥ 22.19 runs TypeScript as is):
 *
 *     GCX_GATEWAY_KEY=gcx_sk_… node examples/checkout/server.ts
 *
 * Variables: `GCX_GATEWAY_KEY` (required), `GCX_GATEWAY_URL` (default
 * `http://127.0.0.1:8790`), `CHECKOUT_PORT` (default 8080), `CHECKOUT_ORIGIN`
 * (the page's origin when it is served through a proxy, e.g.
 * `https://shop.example`; default `http://` + the request's `Host`). It listens
 * on 127.0.0.1 only. The card goes through in the request body and is never
 * logged or kept. A real shop would also tie each quote id to the shopper's
 * session (here any page of this origin may follow any quote submitted here).
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { Readable } from "node:stream"
import type { ReadableStream } from "node:stream/web"
import { fileURLToPath } from "node:url"

/** Where the gateway is and the key the backend calls it with. */
export interface Options {
  readonly gatewayUrl: string
  readonly apiKey: string
  /** The page's origin (`https://shop.example`); default `http://` + the request's `Host`. */
  readonly origin?: string | undefined
  /** How many of the latest quote ids are kept (and proxied); default 10,000. */
  readonly maxQuotes?: number | undefined
}

/** The ids of the quotes this backend created, the latest `max`: the only ones it proxies. */
const quoteIds = (max: number) => {
  const ids = new Set<string>()
  return {
    add: (id: string): void => {
      ids.delete(id)
      ids.add(id)
      // a Set iterates in insertion order: the first one is the oldest
      if (ids.size > max) ids.delete(ids.values().next().value!)
    },
    has: (id: string): boolean => ids.has(id)
  }
}

type Quotes = ReturnType<typeof quoteIds>

/** The static files, by path: nothing else of the folder is served. */
const files: Readonly<Record<string, readonly [file: string, type: string]>> = {
  "/": ["index.html", "text/html; charset=utf-8"],
  "/checkout.js": ["checkout.js", "text/javascript; charset=utf-8"],
  "/checkout.css": ["checkout.css", "text/css; charset=utf-8"]
}

const folder = Path.dirname(fileURLToPath(import.meta.url))

/** Scripts, styles and connections from this origin only; no framing. */
const security = {
  "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer"
}

/** A quote id as the gateway gives it; anything else is refused before a call. */
const quoteId = /^[A-Za-z0-9_-]{1,128}$/

/** The largest card submission read from the browser, in bytes. */
const maxBody = 4_096

const sendJson = (response: Http.ServerResponse, status: number, body: unknown): void => {
  response.writeHead(status, { ...security, "Content-Type": "application/json", "Cache-Control": "no-store" })
  response.end(JSON.stringify(body))
}

const sendError = (response: Http.ServerResponse, status: number, code: string, message: string): void =>
  sendJson(response, status, { error: { code, message } })

/** The request's body as text, or `undefined` past `maxBody` bytes. */
const readBody = async (request: Http.IncomingMessage): Promise<string | undefined> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of request) {
    size += (chunk as Buffer).length
    if (size > maxBody) return undefined
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString("utf8")
}

/** Only the three fields the gateway takes, as strings, or `undefined`. */
const cardOf = (text: string): Record<string, string> | undefined => {
  try {
    const body = JSON.parse(text)
    const fields = ["cardNumber", "pinNumber", "productLineId"] as const
    if (!fields.every((field) => typeof body?.[field] === "string")) return undefined
    return Object.fromEntries(fields.map((field) => [field, body[field] as string]))
  } catch {
    return undefined
  }
}

/** Calls the gateway; a network failure or a 502/503/504 is tried again (3 tries), with the same headers. */
const callGateway = async (options: Options, path: string, init: RequestInit): Promise<Response> => {
  const headers = { ...init.headers as Record<string, string>, Authorization: `Bearer ${options.apiKey}` }
  for (let attempt = 1;; attempt++) {
    try {
      const answer = await fetch(new URL(path, options.gatewayUrl), { ...init, headers })
      if (attempt < 3 && [502, 503, 504].includes(answer.status)) {
        await answer.body?.cancel()
      } else {
        return answer
      }
    } catch (error) {
      if (attempt >= 3 || init.signal?.aborted) throw error
    }
    await new Promise((resolve) => setTimeout(resolve, 250 * attempt))
  }
}

/** Passes the gateway's answer on (status, type, body as it streams), with this origin's headers. */
const pass = async (answer: Response, response: Http.ServerResponse): Promise<void> => {
  const headers: Record<string, string> = { ...security, "Cache-Control": "no-store" }
  for (const name of ["content-type", "retry-after"]) {
    const value = answer.headers.get(name)
    if (value !== null) headers[name] = value
  }
  response.writeHead(answer.status, headers)
  response.flushHeaders()
  if (answer.body === null) return void response.end()
  await new Promise<void>((resolve) => {
    Readable.fromWeb(answer.body as ReadableStream)
      .on("error", () => response.destroy())
      .on("end", resolve)
      .pipe(response)
      .on("close", resolve)
  })
}

/** Whether `request` is JSON, and from this page when a browser says where it comes from (against CSRF). */
const refusal = (options: Options, request: Http.IncomingMessage): readonly [number, string] | undefined => {
  const origin = request.headers.origin
  if (origin !== undefined && origin !== (options.origin ?? `http://${request.headers.host}`)) {
    return [403, "the submission comes from another site"]
  }
  const type = request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase()
  return type === "application/json" ? undefined : [415, "the submission must be application/json"]
}

/** `POST /api/quotes`: the card to the gateway, under a new Idempotency-Key. */
const submit = async (
  options: Options,
  quotes: Quotes,
  request: Http.IncomingMessage,
  response: Http.ServerResponse
) => {
  const refused = refusal(options, request)
  if (refused !== undefined) return sendError(response, refused[0], "invalid_request", refused[1])
  const text = await readBody(request)
  if (text === undefined) return sendError(response, 413, "payload_too_large", "the submission is too large")
  const card = cardOf(text)
  if (card === undefined) {
    return sendError(response, 400, "invalid_request", "cardNumber, pinNumber and productLineId are required")
  }
  const answer = await callGateway(options, "/v1/quotes", {
    method: "POST",
    headers: { "Content-Type": "application/json", "Idempotency-Key": Crypto.randomUUID() },
    body: JSON.stringify(card)
  })
  if (answer.status !== 202) return pass(answer, response)
  const quote = await answer.json() as { id: string; status: string }
  quotes.add(quote.id)
  sendJson(response, 202, {
    id: quote.id,
    status: quote.status,
    links: { self: `/api/quotes/${quote.id}`, events: `/api/quotes/${quote.id}/events` }
  })
}

/** `GET /api/quotes/:id[/events]`: the quote or its event stream, passed through. */
const follow = async (options: Options, request: Http.IncomingMessage, response: Http.ServerResponse, path: string) => {
  const abort = new AbortController()
  response.on("close", () => abort.abort())
  const lastEventId = request.headers["last-event-id"]
  const answer = await callGateway(options, `/v1${path.slice("/api".length)}`, {
    headers: typeof lastEventId === "string" ? { "Last-Event-ID": lastEventId } : {},
    signal: abort.signal
  })
  await pass(answer, response)
}

const route = async (
  options: Options,
  quotes: Quotes,
  request: Http.IncomingMessage,
  response: Http.ServerResponse
) => {
  const path = new URL(request.url ?? "/", "http://localhost").pathname
  const file = files[path]
  if (request.method === "GET" && file !== undefined) {
    response.writeHead(200, { ...security, "Content-Type": file[1] })
    return void response.end(Fs.readFileSync(Path.join(folder, file[0])))
  }
  if (request.method === "POST" && path === "/api/quotes") return submit(options, quotes, request, response)
  const match = /^\/api\/quotes\/([^/]+)(\/events)?$/.exec(path)
  if (request.method === "GET" && match !== null) {
    if (!quoteId.test(match[1]!)) return sendError(response, 400, "invalid_request", "the quote id is malformed")
    // only the quotes submitted here: not the other quotes of the shop's key
    if (!quotes.has(match[1]!)) return sendError(response, 404, "not_found", "no such quote")
    return follow(options, request, response, path)
  }
  sendError(response, 404, "not_found", "no such page")
}

/** The backend's request handler. */
export const handler = (options: Options) => {
  const quotes = quoteIds(options.maxQuotes ?? 10_000)
  return (request: Http.IncomingMessage, response: Http.ServerResponse) =>
    route(options, quotes, request, response).catch(() => {
      // the gateway is down or went away: say so without details (they could name internal hosts)
      if (!response.headersSent) sendError(response, 502, "unavailable", "the quote service cannot be reached")
      else response.destroy()
    })
}

/** Starts the backend on 127.0.0.1:`port` (0: any free port); gives its URL and a way to stop it. */
export const start = (options: Options, port = 0): Promise<{ readonly url: string; readonly close: () => void }> =>
  new Promise((resolve, reject) => {
    const server = Http.createServer(handler(options))
    server.once("error", reject).listen(port, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => {
          server.close()
          server.closeAllConnections()
        }
      })
    })
  })

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const apiKey = process.env.GCX_GATEWAY_KEY
  if (apiKey === undefined || apiKey === "") {
    console.error("checkout: GCX_GATEWAY_KEY is not set (the gateway API key, gcx_sk_…)")
    process.exit(2)
  }
  const gatewayUrl = process.env.GCX_GATEWAY_URL ?? "http://127.0.0.1:8790"
  const origin = process.env.CHECKOUT_ORIGIN
  const { url } = await start({ gatewayUrl, apiKey, origin }, Number(process.env.CHECKOUT_PORT ?? 8080))
  console.log(`checkout on ${url} (gateway ${gatewayUrl})`)
}
