/**
 * The gateway's shutdown. Node's `server.close()`, which the platform's
 * server calls when its layer closes, stops accepting connections and closes
 * those idle at that moment; the others stay until their requests end, and a
 * keep-alive connection that goes idle afterwards is kept for
 * `keepAliveTimeout` and serves more requests meanwhile. An open event stream
 * never ends by itself, so one would hold the shutdown for the platform's
 * whole grace period (20 s) and then be cut mid-chunk.
 *
 * So, when the gateway starts to close, before the server waits for its
 * connections, it drains: the open event streams end cleanly (their clients
 * resume with `Last-Event-ID`, elsewhere), every answer from then on carries
 * `Connection: close`, and connections are closed as soon as they are idle.
 * Requests in flight (a submit) finish and are answered.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Http from "node:http"

/** The gateway's shutdown, as its streams and middleware see it. */
export interface Drain {
  /** Whether the gateway has started to close. */
  readonly draining: () => boolean
}

/** A gateway that never drains: what the gateway's streams see outside its server (tests, other hosts). */
const never: Drain = { draining: () => false }

/** The drain of the gateway's server in context; `never` by default. */
export const Draining = Context.Reference<Drain>("@gcx/gateway/internal/Draining", { defaultValue: () => never })

/** How often idle connections are closed while the server closes. */
const idleSweepMillis = 25

/**
 * A drain of `server`, and `start`, which begins it (once) and returns at
 * once; whoever starts it wakes the open streams (`KeepAlives.wakeAll`).
 * The sweep of idle connections stops when the server has closed, or when
 * the scope closes (a connection still open after the platform's grace
 * period would otherwise keep it going).
 */
export const make = (
  server: Http.Server
): Effect.Effect<{ readonly drain: Drain; readonly start: Effect.Effect<void> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    let draining = false
    let sweep: ReturnType<typeof setInterval> | undefined
    const stopSweep = () => clearInterval(sweep)
    yield* Effect.addFinalizer(() => Effect.sync(stopSweep))
    const start = Effect.sync(() => {
      if (draining || !server.listening) return
      draining = true
      // a connection that goes idle after `close()` (a stream ended, an answer) is closed at the next sweep
      sweep = setInterval(() => server.closeIdleConnections(), idleSweepMillis)
      sweep.unref()
      server.once("close", stopSweep)
    })
    return { drain: { draining: () => draining }, start }
  })
