/**
 * The dashboard at `/__sandbox/ui`: one static page (HTML, CSS and a little
 * JavaScript, no CDN, no build step) and the admin API's event stream that
 * keeps it live. The page asks for the admin key and sends it as the
 * `x-admin-key` header of every call, never in a URL.
 */
import { ErrorBody, Routes } from "@gcx/core"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Faults from "../Faults.js"
import type * as Journal from "../Journal.js"
import type { Store } from "../Store.js"
import { errorResponse } from "./answers.js"
import { SandboxConfig } from "./config.js"
import * as Feed from "./dashboardFeed.js"
import { page } from "./dashboardPage.js"
import { extraPaths } from "./routes.js"

/** How many event streams a sandbox serves at once by default. */
export const defaultMaxStreams = 16

/** How often a stream looks for changes. */
const interval = "500 millis"

/** How many ticks one connection gets (10 minutes); the page then reconnects. */
const maxTicks = 1_200

/** The seconds a refused stream is told to wait (`Retry-After`). */
const retryAfterSeconds = 5

const encoder = new TextEncoder()

const encodeMessage = (message: Feed.Message): Uint8Array =>
  encoder.encode(`event: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`)

/**
 * The handler of the event stream of one sandbox, which serves at most
 * `maxDashboardStreams` streams at once. A stream holds its place for the
 * scope of its request, which closes when the stream ends or the client goes
 * away; beyond the cap, the answer is 503 with an Error body and
 * `Retry-After`. Each stream sends what `Feed` gives: a `snapshot` event, then
 * `delta` events.
 */
export const makeEvents: Effect.Effect<
  Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>,
  never,
  SandboxConfig | Store | Journal.Recorder | Faults.FaultInjector
> = Effect.gen(function*() {
  const { maxDashboardStreams } = yield* SandboxConfig
  const makeFeed = Effect.provide(
    Feed.make,
    yield* Effect.context<SandboxConfig | Store | Journal.Recorder | Faults.FaultInjector>()
  )
  let open = 0
  const takePlace = Effect.acquireRelease(
    Effect.sync(() => {
      if (open >= maxDashboardStreams) return false
      open++
      return true
    }),
    (taken) => taken ? Effect.sync(() => open--) : Effect.void
  )
  const refused = errorResponse(503, {
    ErrorCode: ErrorBody.ErrorCodes.serviceUnavailable,
    Message:
      `Too many dashboard streams are open (at most ${maxDashboardStreams}): close a dashboard tab, or retry later`
  }, { [Routes.Headers.retryAfter]: String(retryAfterSeconds) })
  return Effect.flatMap(takePlace, (taken) =>
    taken
      ? Effect.map(makeFeed, (feed) =>
        HttpServerResponse.stream(
          Stream.fromEffectSchedule(feed.next, Schedule.spaced(interval)).pipe(
            Stream.take(maxTicks),
            Stream.filter(Option.isSome),
            Stream.map((message) => encodeMessage(message.value))
          ),
          { contentType: "text/event-stream", headers: { "cache-control": "no-store" } }
        ))
      : Effect.succeed(refused))
})

/** The page's answer: the HTML, not cached, scripts and styles from the page only, no framing. */
const pageResponse = HttpServerResponse.text(page, {
  contentType: "text/html; charset=utf-8",
  headers: {
    "cache-control": "no-store",
    "content-security-policy":
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; " +
      "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer"
  }
})

/** Serves the page at `/__sandbox/ui`, beside the API. */
export const layer = HttpRouter.add("GET", extraPaths.dashboard, pageResponse)
