/**
 * gcx never follows a redirect: a 3xx could send the API key, the bearer
 * token, the requestId and the card to another host, and bring back that
 * host's answer as the service's. This module keeps the transports from
 * following one; `transport.ts` turns any 3xx into an `UnexpectedResponse`.
 *
 * Each request runs with, in its context:
 * - `FetchHttpClient.Fetch`: the caller's fetch (else `globalThis.fetch`) called
 *   with `redirect: "manual"`, so that `FetchHttpClient` hands back the 3xx;
 * - `NodeHttpClient.UndiciOptions` (by its key, so that gcx does not depend
 *   on @effect/platform-node): the caller's options with `maxRedirections: 0`,
 *   which a dispatcher composed with undici's redirect interceptor honours (a
 *   plain undici dispatcher never follows; undici 8 accepts 0 and refuses any
 *   other value).
 *
 * Both are set over the request's own context, which wins over what a transport
 * layer was built with: provide a custom `Fetch` or undici options in the
 * calling fiber's context, not on the `HttpClient` layer.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"

type UndiciOptions = Readonly<Record<string, unknown>>

/** `NodeHttpClient.UndiciOptions` of @effect/platform-node 4: a `Context.Reference` is found by its key. */
const UndiciOptions = Context.Reference<UndiciOptions>("@effect/platform-node/NodeHttpClient/UndiciOptions", {
  defaultValue: () => ({})
})

const manual = (fetch: typeof globalThis.fetch): typeof globalThis.fetch => (input, init) =>
  fetch(input, { ...init, redirect: "manual" })

// Read at call time, so that a fetch installed later (a test's stub) is the one used.
const globalFetchManual: typeof globalThis.fetch = (input, init) =>
  globalThis.fetch(input, { ...init, redirect: "manual" })

const noRedirections: UndiciOptions = { maxRedirections: 0 }

// What each fetch and each set of undici options becomes, built once for each: a request's context
// differs from the last one's (each call has its own span), the fetch and the options in it seldom do.
const manualFetches = new WeakMap<typeof globalThis.fetch, typeof globalThis.fetch>()
const refusingOptions = new WeakMap<UndiciOptions, UndiciOptions>()
const refusing = new WeakSet<object>([globalFetchManual, noRedirections])

const manualFetch = (fetch: typeof globalThis.fetch | undefined): typeof globalThis.fetch => {
  if (fetch === undefined) return globalFetchManual
  if (refusing.has(fetch)) return fetch
  let out = manualFetches.get(fetch)
  if (out === undefined) {
    out = manual(fetch)
    manualFetches.set(fetch, out)
    refusing.add(out)
  }
  return out
}

const refusingUndici = (options: UndiciOptions | undefined): UndiciOptions => {
  if (options === undefined) return noRedirections
  if (refusing.has(options)) return options
  let out = refusingOptions.get(options)
  if (out === undefined) {
    out = { ...options, maxRedirections: 0 }
    refusingOptions.set(options, out)
    refusing.add(out)
  }
  return out
}

/** The context with the redirect-refusing fetch and undici options: one copy of it, or none when it has them. */
const withoutRedirects = (context: Context.Context<never>): Context.Context<never> => {
  const fetch = Context.getOrUndefined(context, FetchHttpClient.Fetch)
  const undici = Context.getOrUndefined(context, UndiciOptions)
  const wantedFetch = manualFetch(fetch)
  const wantedUndici = refusingUndici(undici)
  if (wantedFetch === fetch && wantedUndici === undici) return context
  // One context on top of the request's (Context.add keeps the parent): no copy of its services.
  return context.pipe(Context.add(FetchHttpClient.Fetch, wantedFetch), Context.add(UndiciOptions, wantedUndici))
}

/** The client with every request sent so that the transport does not follow redirects (see the module notes). */
export const refuseRedirects = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(client, Effect.updateContext(withoutRedirects))

/** Whether a status is a redirect (3xx), which gcx never follows. */
export const isRedirect = (status: number): boolean => status >= 300 && status < 400
