/**
 * The gateway's shutdown over real HTTP (node:http clients with keep-alive
 * connections, as a load balancer or a backend holds them), with its real
 * stores on SQLite in a temporary file and a real sandbox, and a restart on
 * the same file: open event streams end cleanly and resume on the restarted
 * gateway; a request in flight is answered with `Connection: close`; no
 * connection is kept for more requests; nothing waits out the platform's
 * 20 s grace period.
 */
import { describe, expect, it } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Exit, Fiber, Redacted, Scope } from "effect"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Path from "node:path"
import * as Drain from "../src/internal/drain.js"
import { awaitDone, call, cardBody, expectWholeStream, messagesOf, start, tempDirectory } from "./utils/gateway.js"

/** A quiet sandbox on which the slow card takes 6 s: long enough to close a gateway while it runs. */
const sandbox = Sandbox.layer({ logLevel: "None", timeScale: 0.2 })

/** An answer read over node:http: its status and headers, its text, and whether it ended whole. */
interface Received {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
  /** The body ended with its terminator (not cut). */
  readonly complete: boolean
  /** The connection, to watch it close. */
  readonly socket: Net.Socket
}

/** A request over `agent`; `onData` sees the text so far; `body`, when given, is sent when `send` resolves. */
const request = (
  agent: Http.Agent,
  url: string,
  options: {
    readonly method?: string
    readonly headers?: Http.OutgoingHttpHeaders
    readonly body?: { readonly text: string; readonly send: Promise<void> }
    readonly onData?: (text: string) => void
  } = {}
) =>
  new Promise<Received>((resolve, reject) => {
    const outgoing = Http.request(url, { agent, method: options.method ?? "GET", headers: options.headers }, (res) => {
      let text = ""
      // detached from the answer once it is read: taken now
      const socket = res.socket as Net.Socket
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
        options.onData?.(text)
      })
      res.on("close", () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          text,
          complete: res.complete,
          socket
        }))
    })
    outgoing.on("error", reject)
    if (options.body === undefined) return outgoing.end()
    const { send, text } = options.body
    // the head and the first byte now, the rest when told: the request is in flight until then
    outgoing.flushHeaders()
    outgoing.write(text.slice(0, 1))
    void send.then(() => outgoing.end(text.slice(1)))
  })

/** Resolves when `socket` is closed. */
const closed = (socket: Net.Socket) =>
  Effect.promise(() =>
    socket.destroyed ? Promise.resolve() : new Promise<void>((resolve) => socket.once("close", () => resolve()))
  )

/** Whether a new connection to `url` is refused (the server has stopped listening). */
const refused = (url: string) =>
  Effect.promise(() =>
    new Promise<boolean>((resolve) => {
      const { hostname, port } = new URL(url)
      const socket = Net.connect(Number(port), hostname)
      socket.once("connect", () => {
        socket.destroy()
        resolve(false)
      })
      socket.once("error", () => resolve(true))
    })
  )

/** Waits until the server of `url` has stopped listening (its shutdown has started). */
const untilRefused = (url: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      if (yield* refused(url)) return
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.die(new Error("the gateway still accepts connections"))
  })

/** A gateway with its real stores on `filename` in a scope of its own. */
const startOn = (filename: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const gateway = yield* start({ stores: "real", filename }).pipe(Scope.provide(scope))
    return { gateway, scope }
  })

/** The first gateway on a new database file, and a caller's key on it. */
const firstGateway = Effect.gen(function*() {
  const filename = Path.join(yield* tempDirectory, "gcx.db")
  const first = yield* startOn(filename)
  const created = yield* first.gateway.keys.create({ name: "shop", ratePerSecond: 50, burst: 50 })
  return { ...first, filename, key: Redacted.value(created.key) }
})

/** Closes `scope`, and how long it took in ms. */
const timedClose = (scope: Scope.Closeable) =>
  Effect.gen(function*() {
    const started = Date.now()
    yield* Scope.close(scope, Exit.void)
    return Date.now() - started
  })

/** How many callers follow the quote's events when the gateway closes. */
const streams = 50

/**
 * How soon the open streams end once the gateway starts to close (about 15 ms
 * here): well under the slow card's next event, seconds away at this time
 * scale, so that only the drain's wake-up ends them in time (without it: 5.9 s).
 */
const wokenWithinMillis = 1_000

/**
 * Resolves when an HTTP server of this process has parsed the head of a
 * `method` request to `path` (Node's `http.server.request.start` channel).
 */
const requestStarted = (method: string, path: string) =>
  new Promise<void>((resolve) => {
    const channel = DiagnosticsChannel.channel("http.server.request.start")
    const onStart = (message: unknown) => {
      const { request } = message as { readonly request: Http.IncomingMessage }
      if (request.method !== method || request.url !== path) return
      channel.unsubscribe(onStart)
      resolve()
    }
    channel.subscribe(onStart)
  })

describe("the gateway's shutdown", () => {
  it.live(
    "open event streams end cleanly and their connections close at once; a client resumes on the restarted gateway",
    () =>
      Effect.gen(function*() {
        const first = yield* firstGateway
        const { filename, key } = first
        const submitted = yield* call(`${first.gateway.url}/v1/quotes`, {
          method: "POST",
          key,
          idempotencyKey: "order-drain",
          body: cardBody(TestData.Cards.slow)
        })
        expect(submitted.status).toBe(202)
        const id: string = submitted.json.id
        // callers on connections of their own, each following the quote
        const agents = Array.from({ length: streams }, () => new Http.Agent({ keepAlive: true, maxSockets: 1 }))
        const following = agents.map((agent) => {
          let sawSubmitted: () => void = () => {}
          const seen = new Promise<void>((resolve) => (sawSubmitted = resolve))
          const stream = request(agent, `${first.gateway.url}/v1/quotes/${id}/events`, {
            headers: { authorization: `Bearer ${key}` },
            onData: (text) => text.includes("event: Submitted") && sawSubmitted()
          })
          return { seen, stream }
        })
        yield* Effect.promise(() => Promise.all(following.map(({ seen }) => seen)))

        // the slow card is pending for seconds yet: the shutdown ends these streams
        const closeStarted = Date.now()
        const closing = yield* Effect.forkChild(timedClose(first.scope))
        const dropped = yield* Effect.promise(() => Promise.all(following.map(({ stream }) => stream)))
        const ended = Date.now()
        // woken by the drain, not by the quote's next event (seconds away)
        expect(ended - closeStarted).toBeLessThan(wokenWithinMillis)
        for (const answer of dropped) {
          expect(answer.status).toBe(200)
          expect(answer.headers["connection"]).toBe("keep-alive")
          // ended with the chunked body's terminator, not cut: EventSource and the Python client resume at once
          expect(answer.complete).toBe(true)
        }
        const before = messagesOf(dropped[0]!.text)
        expect(before[0]?.event).toBe("Submitted")
        expect(before.some((message) => message.event === "Completed" || message.event === "Failed")).toBe(false)
        // their keep-alive connections are not kept for more requests (Node keeps one for keepAliveTimeout, 5 s)
        yield* Effect.forEach(dropped, (answer) => closed(answer.socket), { discard: true })
        expect(Date.now() - ended).toBeLessThan(2_000)
        // the platform's grace period for open connections is 20 s: nothing waited it out
        expect(yield* Fiber.join(closing)).toBeLessThan(15_000)
        for (const agent of agents) agent.destroy()

        const second = yield* startOn(filename)
        const resumed = yield* call(`${second.gateway.url}/v1/quotes/${id}/events`, {
          key,
          headers: { "last-event-id": String(before.at(-1)!.id) }
        })
        expect(resumed.status).toBe(200)
        const after = messagesOf(resumed.text)
        expect(after[0]?.id).toBe(before.at(-1)!.id + 1)
        expectWholeStream([...before, ...after], "Completed")
        yield* Scope.close(second.scope, Exit.void)
      }).pipe(Effect.scoped, Effect.provide(sandbox)),
    60_000
  )

  it.live(
    "a submit in flight is answered 202 with Connection: close, its quote completes after the restart; an idle connection is closed",
    () =>
      Effect.gen(function*() {
        const first = yield* firstGateway
        const { filename, key } = first
        const url = first.gateway.url
        const idle = new Http.Agent({ keepAlive: true, maxSockets: 1 })
        const busy = new Http.Agent({ keepAlive: true, maxSockets: 1 })
        const health = yield* Effect.promise(() => request(idle, `${url}/healthz`))
        expect(health.status).toBe(200)
        expect(health.headers["connection"]).toBe("keep-alive")

        const headParsed = requestStarted("POST", "/v1/quotes")
        let send: () => void = () => {}
        const sent = new Promise<void>((resolve) => (send = resolve))
        const body = JSON.stringify(cardBody(TestData.Cards.success))
        const inFlight = request(busy, `${url}/v1/quotes`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "idempotency-key": "order-in-flight",
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body)
          },
          body: { text: body, send: sent }
        })
        // the gateway has parsed the request's head: the request is in flight
        yield* Effect.promise(() => headParsed)

        const closing = yield* Effect.forkChild(timedClose(first.scope))
        yield* untilRefused(url)
        // the connection idle when the shutdown began is closed by the gateway
        yield* closed(health.socket)
        send()
        const answered = yield* Effect.promise(() => inFlight)
        expect(answered.status).toBe(202)
        expect(answered.headers["connection"]).toBe("close")
        yield* closed(answered.socket)
        expect(yield* Fiber.join(closing)).toBeLessThan(15_000)
        idle.destroy()
        busy.destroy()

        // accepted means recorded: the restarted gateway runs the quote to its values, one transaction
        const id: string = JSON.parse(answered.text).id
        const second = yield* startOn(filename)
        const done = yield* awaitDone(second.gateway.url, key, id)
        expect(done.json.status).toBe("completed")
        const transactions = yield* second.gateway.sandbox.transactions
        expect(transactions.filter((transaction) => transaction.requestId === id)).toHaveLength(1)
        yield* Scope.close(second.scope, Exit.void)
      }).pipe(Effect.scoped, Effect.provide(sandbox)),
    60_000
  )

  it.live(
    "a POST waiting for its quote (Prefer: wait) is answered 202 at once when the gateway closes",
    () =>
      Effect.gen(function*() {
        const first = yield* firstGateway
        const { filename, key } = first
        const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
        const body = JSON.stringify(cardBody(TestData.Cards.slow))
        const waiting = request(agent, `${first.gateway.url}/v1/quotes`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "idempotency-key": "order-waiting",
            "content-type": "application/json",
            prefer: "wait=30"
          },
          body: { text: body, send: Promise.resolve() }
        })
        // the service has the quote: the POST is waiting for its outcome, 6 s away
        for (let attempt = 0; attempt < 400 && (yield* first.gateway.sandbox.transactions).length === 0; attempt++) {
          yield* Effect.sleep("10 millis")
        }
        const closeStarted = Date.now()
        const closing = yield* Effect.forkChild(timedClose(first.scope))
        const answered = yield* Effect.promise(() => waiting)
        expect(Date.now() - closeStarted).toBeLessThan(wokenWithinMillis)
        expect(answered.status).toBe(202)
        expect(answered.headers["preference-applied"]).toBe("wait=30")
        expect(answered.headers["connection"]).toBe("close")
        const accepted = JSON.parse(answered.text)
        expect(accepted.status).toBe("pending")
        expect(yield* Fiber.join(closing)).toBeLessThan(15_000)
        agent.destroy()

        // its quote runs on after the restart: one transaction
        const second = yield* startOn(filename)
        const done = yield* awaitDone(second.gateway.url, key, accepted.id)
        expect(done.json.status).toBe("completed")
        const transactions = yield* second.gateway.sandbox.transactions
        expect(transactions.filter((transaction) => transaction.requestId === accepted.id)).toHaveLength(1)
        yield* Scope.close(second.scope, Exit.void)
      }).pipe(Effect.scoped, Effect.provide(sandbox)),
    60_000
  )

  it.live("a keep-alive connection that goes idle after the server's close() is closed at once, not after keepAliveTimeout", () =>
    Effect.gen(function*() {
      // a plain server whose answer (keep-alive) comes after close(), as an event stream ended late does
      let answer: () => void = () => {}
      // released even when an expectation fails: no server left listening, no socket left open
      const server = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Http.createServer((_, res) => {
            answer = () => res.end("late")
          })
        ),
        (server) => Effect.sync(() => server.close().closeAllConnections())
      )
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)))
      const { port } = server.address() as Net.AddressInfo
      const { drain, start } = yield* Drain.make(server)
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => new Http.Agent({ keepAlive: true, maxSockets: 1 })),
        (agent) => Effect.sync(() => agent.destroy())
      )
      const pending = request(agent, `http://127.0.0.1:${port}/`)
      yield* Effect.sleep("100 millis")
      expect(drain.draining()).toBe(false)
      yield* start
      yield* start
      expect(drain.draining()).toBe(true)
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()))
      answer()
      const answered = yield* Effect.promise(() => pending)
      expect(answered.headers["connection"]).toBe("keep-alive")
      const idleAt = Date.now()
      yield* closed(answered.socket)
      yield* Effect.promise(() => serverClosed)
      expect(Date.now() - idleAt).toBeLessThan(1_000)
    }).pipe(Effect.scoped))

  it.live("the sweep of idle connections stops with the drain's scope, even while a connection holds the server open", () =>
    Effect.gen(function*() {
      // a server that never answers: its one connection stays busy, so close() never completes
      const server = yield* Effect.acquireRelease(
        Effect.sync(() => Http.createServer(() => {})),
        (server) => Effect.sync(() => server.close().closeAllConnections())
      )
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)))
      const { port } = server.address() as Net.AddressInfo
      let sweeps = 0
      const closeIdle = server.closeIdleConnections.bind(server)
      server.closeIdleConnections = () => {
        sweeps++
        closeIdle()
      }
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => new Http.Agent({ keepAlive: true, maxSockets: 1 })),
        (agent) => Effect.sync(() => agent.destroy())
      )
      const headParsed = requestStarted("GET", "/held")
      request(agent, `http://127.0.0.1:${port}/held`).catch(() => {})
      yield* Effect.promise(() => headParsed)

      const scope = yield* Scope.make()
      const { start } = yield* Drain.make(server).pipe(Scope.provide(scope))
      yield* start
      server.close()
      yield* Effect.sleep("200 millis")
      expect(sweeps).toBeGreaterThan(2)
      yield* Scope.close(scope, Exit.void)
      const stopped = sweeps
      yield* Effect.sleep("200 millis")
      expect(sweeps).toBe(stopped)
      expect(server.listening).toBe(false)
    }).pipe(Effect.scoped))
})
