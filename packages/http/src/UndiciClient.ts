/**
 * An `HttpClient` over undici's dispatcher (`NodeHttpClient.Dispatcher` of
 * `@effect/platform-node`), for Node: the one gcx's Node entry points provide.
 *
 * It sends what `NodeHttpClient.layerUndici` sends, through the same
 * dispatcher and `NodeHttpClient.UndiciOptions`, with the same errors, spans
 * and interruption (it is made with `HttpClient.make`). What differs is the
 * answer: its body is kept as undici hands over the chunks, with no Node
 * stream, async resource or promise per request, and a whole read of a body
 * that has arrived runs synchronously. One exchange of a small JSON answer
 * (every answer of the exchange), without the platform's span as gcx sends
 * them, costs 0.6–0.7× the CPU it costs through `layerUndici`, near a bare
 * `undici.request` (`bench/profile/platform-floor.ts --untraced`; bench row 1).
 *
 * Not re-exported by `@gcx/http`: import it as `@gcx/http/UndiciClient`, with
 * `@effect/platform-node` installed (an optional peer of `@gcx/http`).
 *
 * - Past 64 KiB kept and not yet read, the dispatch is paused until the body
 *   is read: an unread body holds no more than that beyond the socket's
 *   buffers. A response dropped unread is aborted when it is collected, as
 *   with `layerUndici`.
 * - `stream` hands the chunks over as they arrive; ending it early cancels
 *   the rest of the body.
 * - Requests with a streamed or `FormData` body, and upgrades, go through
 *   `layerUndici`'s client on the same dispatcher.
 *
 * @example
 * ```ts
 * import { ExchangeClient } from "@gcx/http"
 * import * as UndiciClient from "@gcx/http/UndiciClient"
 * import { Layer } from "effect"
 *
 * // The exchange client configured by the GCX_* variables, its HTTP over undici.
 * const ClientLive = ExchangeClient.layerConfig().pipe(Layer.provide(UndiciClient.layer))
 * ```
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Layer from "effect/Layer"
import * as Body from "./internal/undiciBody.js"
import * as Response from "./internal/undiciResponse.js"

type Dispatcher = NodeHttpClient.Dispatcher["Service"]
type DispatchOptions = Parameters<Dispatcher["dispatch"]>[0]

const transportError = (request: HttpClientRequest.HttpClientRequest, cause: unknown) =>
  new HttpClientError.HttpClientError({ reason: new HttpClientError.TransportError({ request, cause }) })

/** The body undici sends, for the bodies this client sends itself. */
const bodyOf = (request: HttpClientRequest.HttpClientRequest): Exclude<DispatchOptions["body"], undefined> =>
  request.body._tag === "Uint8Array" || request.body._tag === "Raw"
    ? request.body.body as Exclude<DispatchOptions["body"], undefined>
    : null

/** A request this client sends itself: no streamed or `FormData` body, no upgrade. */
const sentHere = (request: HttpClientRequest.HttpClientRequest): boolean =>
  (request.body._tag === "Empty" || request.body._tag === "Uint8Array" || request.body._tag === "Raw") &&
  request.headers.upgrade === undefined

/** What a dispatch hands back once: cleared at its first answer, so that nothing outlives the head. */
interface Pending {
  request: HttpClientRequest.HttpClientRequest | undefined
  url: string
  resume:
    | ((effect: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>) => void)
    | undefined
}

/** Hands `effect` to the waiting fiber once, after undici's callback has returned (see `handler`). */
const answer = (
  pending: Pending,
  effect: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<
    HttpClientResponse.HttpClientResponse,
    HttpClientError.HttpClientError
  >
): void => {
  const { request, resume } = pending
  pending.request = undefined
  pending.resume = undefined
  if (request === undefined || resume === undefined) return
  queueMicrotask(() => resume(effect(request)))
}

/**
 * The dispatch handler, and the listener that aborts the dispatch with `signal`. Made apart from the
 * fiber's scope: what undici and the signal keep until the body ends holds the body's state and
 * `pending`, never the fiber or the response (an unread response must stay collectable, so that
 * `HttpClient.make` aborts it). The fiber is resumed in a microtask: it never runs inside undici's
 * parser, where reading another paused body would resume a parser from within a parser.
 */
const handler = (body: Body.State, signal: AbortSignal, pending: Pending) => {
  const onAbort = () => body.flow?.abort(signal.reason as Error)
  const settle = () => signal.removeEventListener("abort", onAbort)
  signal.addEventListener("abort", onAbort, { once: true })
  const handler: Parameters<Dispatcher["dispatch"]>[1] = {
    onRequestStart(controller) {
      // Aborted while it waited for a connection: throwing fails the request alone (nothing was sent);
      // `controller.abort` would also destroy the socket.
      if (signal.aborted) throw signal.reason
      body.flow = controller
    },
    onResponseStart(controller, status, headers) {
      if (status < 200) return
      body.flow = controller
      const url = pending.url
      answer(pending, (request) => Effect.succeed(Response.make(request, url, status, headers, body)))
    },
    onResponseData(_controller, chunk) {
      Body.received(body, chunk)
    },
    onResponseEnd() {
      settle()
      Body.ended(body)
    },
    onResponseError(_controller, error) {
      settle()
      if (pending.resume === undefined) Body.failed(body, error)
      else answer(pending, (request) => Effect.fail(transportError(request, error)))
    }
  }
  return { handler, settle }
}

/** One dispatch: the response once its head has arrived, its body arriving into `Body.State`. */
const send = (
  dispatcher: Dispatcher,
  request: HttpClientRequest.HttpClientRequest,
  url: URL,
  signal: AbortSignal,
  fiber: Fiber.Fiber<unknown, unknown>
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> => {
  if (signal.aborted) return Effect.fail(transportError(request, signal.reason))
  const options: DispatchOptions = {
    ...fiber.getRef(NodeHttpClient.UndiciOptions),
    method: request.method as DispatchOptions["method"],
    headers: request.headers,
    origin: url.origin,
    path: url.pathname + url.search,
    body: bodyOf(request),
    // Timeouts are the caller's (Effect.timeout), as with layerUndici.
    headersTimeout: 60 * 60 * 1000,
    bodyTimeout: 0
  }
  return Effect.callback((resume) => {
    const pending: Pending = { request, url: url.href.split("#")[0]!, resume }
    const dispatch = handler(Body.make(), signal, pending)
    try {
      dispatcher.dispatch(options, dispatch.handler)
    } catch (cause) {
      dispatch.settle()
      answer(pending, (request) => Effect.fail(transportError(request, cause)))
    }
  })
}

/**
 * The client, over the `NodeHttpClient.Dispatcher` in context. Requests it does not send itself
 * (streamed or `FormData` bodies, upgrades) go to `NodeHttpClient.makeUndici`'s client.
 */
export const make: Effect.Effect<HttpClient.HttpClient, never, NodeHttpClient.Dispatcher> = Effect.gen(function*() {
  const dispatcher = yield* NodeHttpClient.Dispatcher
  const platform = yield* NodeHttpClient.makeUndici
  const client = HttpClient.make((request, url, signal, fiber) => send(dispatcher, request, url, signal, fiber))
  return HttpClient.makeWith<never, never, HttpClientError.HttpClientError, never>(
    (effect) =>
      Effect.flatMap(effect, (request) => sentHere(request) ? client.execute(request) : platform.execute(request)),
    Effect.succeed
  )
})

/** The client over the `NodeHttpClient.Dispatcher` in context. */
export const layerNoDispatcher: Layer.Layer<HttpClient.HttpClient, never, NodeHttpClient.Dispatcher> = HttpClient
  .layerMergedContext(make)

/** The client over a dispatcher of its own (`NodeHttpClient.layerDispatcher`), closed with the layer. */
export const layer: Layer.Layer<HttpClient.HttpClient> = Layer.provide(
  layerNoDispatcher,
  NodeHttpClient.layerDispatcher
)

/** The client over a dispatcher of its own made with undici `Agent` options (`NodeHttpClient.layerDispatcherOptions`). */
export const layerOptions = (
  options?: Parameters<typeof NodeHttpClient.layerDispatcherOptions>[0]
): Layer.Layer<HttpClient.HttpClient> =>
  Layer.provide(layerNoDispatcher, NodeHttpClient.layerDispatcherOptions(options))
