/**
 * gcx never follows a redirect: a 3xx could carry a request's credentials and
 * body to another host, and bring back that host's answer. `refuseRedirects`
 * keeps a client's transport (`FetchHttpClient` or `NodeHttpClient`'s undici)
 * from following one, so that the 3xx itself is the answer; `isRedirect` tells
 * it. For other gcx modules that send requests (the gateway's webhooks).
 */
export {
  /** Whether a status is a redirect (3xx), which gcx never follows. */
  isRedirect,
  /** The client with every request sent so that the transport does not follow redirects. */
  refuseRedirects
} from "./internal/redirects.js"
