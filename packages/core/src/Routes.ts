/**
 * The service's paths and header names (spec section 4), shared by the
 * client and the sandbox so that both spell them the same way.
 */

/** The token endpoint, relative to the auth URL. */
export const tokenPath = "/oauth2/token"

/** The heartbeat endpoint, relative to the base URL. */
export const heartbeatPath = "/exchange/v3/heartbeat"

const stagePrefix = (stage: string | undefined): string => (stage === undefined || stage === "" ? "" : `/${stage}`)

/** The POST quote path, with the optional stage segment (`/prod/v3/exchange/quote`). */
export const quotePath = (stage?: string): string => `${stagePrefix(stage)}/v3/exchange/quote`

/** The GET transaction path, with the optional stage segment. */
export const transactionPath = (transactionId: string, stage?: string): string =>
  `${quotePath(stage)}/${encodeURIComponent(transactionId)}`

/** Header names as the service spells them. HTTP header names are case-insensitive. */
export const Headers = {
  authorization: "authorization",
  apiKey: "x-api-key",
  requestId: "requestId",
  previousAttempts: "previousAttempts",
  traceId: "SVC-TRACE-ID",
  location: "location",
  retryAfter: "retry-after"
} as const
