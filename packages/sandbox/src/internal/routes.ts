/**
 * The sandbox's own router in front of the platform's: it decides which route
 * a request is, from the endpoints of `SandboxApi` (method and exact path),
 * before faults, the journal or the platform's router see it.
 *
 * The platform's router is lenient (case-insensitive, trailing and duplicate
 * slashes ignored, `;…` cut off), so `/V3/EXCHANGE/QUOTE/` would reach the
 * POST handler. Here a path matches only as the API spells it: a request that
 * is served is served as the route it is journaled and faulted as, and any
 * other spelling answers 404 without reaching the API.
 */
import { Routes } from "@gcx/core"
import * as HttpApi from "effect/http-api/HttpApi"
import { SandboxApi } from "../Api.js"
import type * as Journal from "../Journal.js"

/** Which routes a server answers: all of them, all but the token endpoint, or only the token endpoint. */
export type Role = "all" | "api" | "auth"

/** A request's route, whether this server serves it, and the URL the platform's router sees (stage removed). */
export interface Target {
  readonly route: Journal.Route
  readonly served: boolean
  /** The path without its query string, as the request spelled it. */
  readonly pathname: string
  readonly url: string
}

/** The paths served beside the API: the OpenAPI document, the docs, the dashboard and the icon. */
export const extraPaths = {
  openApi: "/openapi.json",
  docs: "/docs",
  dashboard: "/__sandbox/ui",
  favicon: "/favicon.ico"
} as const

interface Pattern {
  readonly method: string
  readonly route: Journal.Route
  readonly regex: RegExp
}

const routeOf = (group: string, endpoint: string): Journal.Route =>
  group === "auth" ? "token" : group === "admin" ? "admin" : endpoint as Journal.Route

/** A path parameter: one segment, without the `;` that the platform's router would cut off. */
const parameter = "[^/;]+"

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const exact = new Map<string, Journal.Route>([
  [`GET ${extraPaths.openApi}`, "other"],
  [`GET ${extraPaths.docs}`, "other"],
  [`GET ${extraPaths.favicon}`, "other"],
  [`GET ${extraPaths.dashboard}`, "admin"]
])
const patterns: Array<Pattern> = []
HttpApi.reflect(SandboxApi, {
  onGroup: () => {},
  onEndpoint: ({ endpoint, group }) => {
    const route = routeOf(group.identifier, endpoint.identifier)
    if (!endpoint.path.includes(":")) {
      exact.set(`${endpoint.method} ${endpoint.path}`, route)
      return
    }
    const source = endpoint.path.split("/").map((segment) => segment.startsWith(":") ? parameter : escape(segment))
    patterns.push({ method: endpoint.method, route, regex: new RegExp(`^${source.join("/")}$`) })
  }
})

const quotePath = Routes.quotePath()

const serves = (role: Role, route: Journal.Route): boolean =>
  role === "all" || (role === "auth" ? route === "token" : route !== "token")

/**
 * The classifier of a server with the given role and stage: the route of a
 * request by its method and exact path. The quote paths also match under
 * `/<stage>`, which the URL handed to the platform's router leaves out.
 */
export const classifier = (role: Role, stage: string) => {
  const stagePrefix = `/${stage}`
  const stagedQuote = `${stagePrefix}${quotePath}`
  return (method: string, url: string): Target => {
    const query = url.indexOf("?")
    const pathname = query < 0 ? url : url.slice(0, query)
    const staged = stage !== "" && pathname.startsWith(stagedQuote) &&
      (pathname.length === stagedQuote.length || pathname.charCodeAt(stagedQuote.length) === 47)
    const unstaged = staged ? pathname.slice(stagePrefix.length) : pathname
    let route = exact.get(`${method} ${unstaged}`)
    if (route === undefined) {
      for (const pattern of patterns) {
        if (pattern.method === method && pattern.regex.test(unstaged)) {
          route = pattern.route
          break
        }
      }
    }
    // Only the quote routes exist under the stage segment.
    if (staged && route !== "createQuote" && route !== "getTransaction") route = undefined
    return {
      route: route ?? "other",
      served: route !== undefined && serves(role, route),
      pathname,
      url: staged ? url.slice(stagePrefix.length) : url
    }
  }
}
