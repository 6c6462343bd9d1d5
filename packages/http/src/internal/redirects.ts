/**
 * gcx never follows a redirect: a 3xx could send the API key, the bearer
 * token, the requestId and the card to another host, and bring back that
 * host's answer as the service's. This module keeps the transports from
 * following one; `transport.ts` turns any 3xx into an `UnexpectedResponse`.
 *
 * Each request runs with, in its context:
 * - `FetchHttpClient.Fetch`: the caller's fetch (else `globalThis.fetch`) called
 *   with `redirect: "manual"`, so that `FetchHttpClient` hands back the 3xx;
 * - `NodeHttpClient.UndiciRequestOptions` (by its key, so that gcx does not
 *   depend on @effect/platform-node): the caller's options with
 *   `maxRedirections: 0`, which a dispatcher composed with undici's redirect
 *   interceptor honours (a plain undici dispatcher never follows).
 *
 * Both are set over the request's own context, which wins over what a transport
 * layer was built with: provide a custom `Fetch` or undici options in the
 * calling fiber's context, not on the `HttpClient` layer.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** The key of `NodeHttpClient.UndiciRequestOptions` in @effect/platform-node. */
const UndiciRequestOptions = Context.GenericTag<never, Readonly<Record<string, unknown>>>(
  "@effect/platform-node/NodeHttpClient/undiciOptions"
)

const manual = (fetch: typeof globalThis.fetch): typeof globalThis.fetch => (input, init) =>
  fetch(input, { ...init, redirect: "manual" })

// Read at call time, so that a fetch installed later (a test's stub) is the one used.
const globalFetchManual: typeof globalThis.fetch = (input, init) =>
  globalThis.fetch(input, { ...init, redirect: "manual" })

// A request's context is usually the same object from one request to the next: derive it once.
const derived = new WeakMap<Context.Context<never>, Context.Context<never>>()

const withoutRedirects = (context: Context.Context<never>): Context.Context<never> => {
  const known = derived.get(context)
  if (known !== undefined) return known
  const fetch = Context.getOption(context, FetchHttpClient.Fetch)
  const undici = Context.getOption(context, UndiciRequestOptions)
  const out = context.pipe(
    Context.add(FetchHttpClient.Fetch, fetch._tag === "Some" ? manual(fetch.value) : globalFetchManual),
    Context.add(UndiciRequestOptions, { ...(undici._tag === "Some" ? undici.value : {}), maxRedirections: 0 })
  )
  derived.set(context, out)
  return out
}

/** The client with every request sent so that the transport does not follow redirects (see the module notes). */
export const refuseRedirects = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(client, Effect.mapInputContext(withoutRedirects))

/** Whether a status is a redirect (3xx), which gcx never follows. */
export const isRedirect = (status: number): boolean => status >= 300 && status < 400
