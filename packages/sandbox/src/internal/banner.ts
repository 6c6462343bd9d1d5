/**
 * What a running sandbox tells people and clients: the options a client
 * needs, the `GCX_*` variables, the dashboard's URL and the banner.
 * `Sandbox` re-exports them.
 */
import { Routes } from "@gcx/core"
import { adminKeyHeader, adminPrefix } from "../Api.js"
import type { Service } from "../Sandbox.js"
import * as TestData from "../TestData.js"

/**
 * What a client needs to talk to a running sandbox as one of its partners:
 * addresses, stage and credentials, shaped like `@gcx/http`'s
 * `ExchangeConfig.Options` (the sandbox does not depend on the client).
 */
export const clientOptions = (
  server: Pick<Service, "baseUrl" | "authUrl" | "stage">,
  partner: TestData.Partner = TestData.partner
) => ({
  environment: "custom" as const,
  baseUrl: server.baseUrl,
  authUrl: server.authUrl,
  stage: server.stage,
  clientId: partner.clientId,
  clientSecret: partner.clientSecret,
  apiKey: partner.apiKey
})

const exportLines = (variables: Record<string, string>): ReadonlyArray<string> => {
  const assignments = Object.entries(variables).map(([name, value]) => `${name}=${value}`)
  return [`  export ${assignments.slice(0, 4).join(" ")}`, `  export ${assignments.slice(4).join(" ")}`]
}

/** The `GCX_*` variables that point gcx (`ExchangeClient.layerConfig`, the CLI) at a running sandbox as `partner`. */
export const environment = (
  server: Pick<Service, "baseUrl" | "authUrl" | "stage">,
  partner: TestData.Partner = TestData.partner
): Record<string, string> => {
  const options = clientOptions(server, partner)
  return {
    GCX_ENV: options.environment,
    GCX_BASE_URL: options.baseUrl,
    GCX_AUTH_URL: options.authUrl,
    GCX_STAGE: options.stage,
    GCX_CLIENT_ID: options.clientId,
    GCX_CLIENT_SECRET: options.clientSecret,
    GCX_API_KEY: options.apiKey
  }
}

/**
 * The dashboard's URL with the admin key in its fragment (`#key=…`), which a
 * browser never sends: the page keeps the key in the tab and drops it from the URL.
 */
export const dashboardUrl = (server: Pick<Service, "baseUrl" | "adminKey">): string =>
  `${server.baseUrl}${adminPrefix}/ui#key=${encodeURIComponent(server.adminKey)}`

/**
 * What a running sandbox prints for people: its addresses (and the one it is
 * bound to, when clients reach it by another), the `Host` names it serves, the
 * admin key, the test partners, the `GCX_*` variables that point gcx at it, the
 * product lines and the scenario cards. Only public test credentials and the
 * admin key appear in it.
 */
export const banner = (server: Service): string =>
  [
    "gcx sandbox is running",
    `  API          ${server.baseUrl}`,
    ...(new URL(server.baseUrl).host === server.boundAddress
      ? []
      : [`  Listening    ${server.boundAddress} (every interface: other machines can reach it)`]),
    `  Quote        ${server.baseUrl}${Routes.quotePath(server.stage)} (also without /${server.stage})`,
    `  Token        ${server.authUrl}${Routes.tokenPath}`,
    `  OpenAPI      ${server.baseUrl}/openapi.json`,
    `  Docs         ${server.baseUrl}/docs`,
    `  Dashboard    ${dashboardUrl(server)}`,
    `  Admin        ${server.baseUrl}${adminPrefix}/  (${adminKeyHeader}: ${server.adminKey})`,
    `  Host names   ${server.hosts.join(", ")} (others get 421; add one with --allowed-host)`,
    "Test partners (client_id / client_secret / x-api-key):",
    ...TestData.partners.map((partner) =>
      `  ${partner.clientId} / ${partner.clientSecret} / ${partner.apiKey}${
        partner.agent === undefined ? "" : "  (human-based balance inquiries)"
      }`
    ),
    "Point gcx at it (the first test partner):",
    ...exportLines(environment(server)),
    `Product lines: ${TestData.productLines.map((line) => line.id).join(", ")}`,
    `Cards (any PIN; PIN ${TestData.rejectedPin} always gives exchange.invalid.card):`,
    ...Object.entries(TestData.Cards).map(([name, number]) => `  ${number}  ${name}`),
    "  any other         success, balance derived from the number",
    "Press Ctrl+C to stop."
  ].join("\n")
