/**
 * The dashboard at `/__sandbox/ui`: one static page (HTML, CSS and a little
 * JavaScript, no CDN, no build step) and the admin API's event stream that
 * keeps it live. The page asks for the admin key and sends it as the
 * `x-admin-key` header of every call, never in a URL.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { DashboardSnapshot } from "../Api.js"
import * as Faults from "../Faults.js"
import * as Journal from "../Journal.js"
import * as Lifecycle from "../Lifecycle.js"
import { Store } from "../Store.js"
import { SandboxConfig } from "./config.js"
import { page } from "./dashboardPage.js"
import { extraPaths } from "./routes.js"

/** How many transactions and journal entries a snapshot carries (the latest). */
export const snapshotSize = 100

/** How often the stream sends a snapshot. */
const interval = "500 millis"

/** How many snapshots one connection gets (10 minutes); the page then reconnects. */
const maxSnapshots = 1_200

const encodeSnapshot = Schema.encodeSync(DashboardSnapshot)

/** The dashboard's view of the sandbox now. */
const snapshot = Effect.gen(function*() {
  const config = yield* SandboxConfig
  const store = yield* Store
  const recorder = yield* Journal.Recorder
  const injector = yield* Faults.FaultInjector
  const now = yield* Clock.currentTimeMillis
  const transactions = (yield* store.all).slice(-snapshotSize).reverse()
  const partners = yield* Effect.forEach(
    config.partners,
    (partner) => Effect.map(store.isEnabled(partner.clientId), (enabled) => ({ clientId: partner.clientId, enabled }))
  )
  const requests = yield* recorder.snapshotCounts
  return encodeSnapshot({
    time: DateTime.unsafeMake(now),
    requests,
    transactions: transactions.map((transaction) => ({
      ...Lifecycle.summaryAt(transaction, now),
      steps: Lifecycle.stepsAt(transaction, now)
    })),
    journal: yield* recorder.recent(snapshotSize),
    faults: yield* injector.rules,
    partners
  })
})

const encoder = new TextEncoder()

/** The event stream: a `snapshot` event now and twice a second after, for at most 10 minutes. */
export const events = Effect.map(
  Effect.context<SandboxConfig | Store | Journal.Recorder | Faults.FaultInjector>(),
  (context) =>
    HttpServerResponse.stream(
      Stream.repeatEffectWithSchedule(Effect.provide(snapshot, context), Schedule.spaced(interval)).pipe(
        Stream.take(maxSnapshots),
        Stream.map((value) => encoder.encode(`event: snapshot\ndata: ${JSON.stringify(value)}\n\n`))
      ),
      { contentType: "text/event-stream", headers: { "cache-control": "no-store" } }
    )
)

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
export const layer = HttpApiBuilder.Router.use((router) =>
  router.get(extraPaths.dashboard, Effect.succeed(pageResponse))
)
