import { describe, expect, it, layer } from "@effect/vitest"
import { ErrorBody, Routes } from "@gcx/core"
import { Faults, Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Result } from "effect"
import {
  admin,
  call,
  credentialsForm,
  exchangeHeaders,
  getTransaction,
  postQuote,
  quoteBody,
  tokenFor,
  tokenRequest
} from "./helpers.js"

const timed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const start = Date.now()
    const result = yield* effect
    return [result, Date.now() - start] as const
  })

/** A server with a token, ready for faulted calls. */
const ready = Effect.gen(function*() {
  const server = yield* Sandbox.SandboxServer
  yield* server.reset
  const token = yield* tokenFor(server)
  const heartbeat = call(`${server.baseUrl}${Routes.heartbeatPath}`, { headers: exchangeHeaders(token) })
  return { server, token, heartbeat }
})

layer(Sandbox.layer({ timeScale: 0.01, seed: 7 }), { excludeTestServices: true })("faults", (it) => {
  it.effect("status503 answers 503 Service Unavailable with Retry-After, and processes nothing", () =>
    Effect.gen(function*() {
      const { server, token } = yield* ready
      yield* server.setFaults([{ route: "createQuote", kind: "status503", times: 1, retryAfterSeconds: 2 }])
      const headers = exchangeHeaders(token)
      const faulted = yield* postQuote(server, headers, quoteBody(TestData.Cards.success))
      expect(faulted.status).toBe(503)
      expect(faulted.body).toEqual({ ErrorCode: ErrorBody.ErrorCodes.serviceUnavailable, Message: expect.any(String) })
      expect(faulted.headers.get("retry-after")).toBe("2")
      expect(faulted.headers.get(Routes.Headers.traceId)).not.toBeNull()
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[headers.requestId!]).toBeUndefined()
      expect(journal.entries.at(-1)).toMatchObject({ route: "createQuote", status: 503, faults: ["status503"] })
      const next = yield* postQuote(server, headers, quoteBody(TestData.Cards.success))
      expect(next.status).toBe(201)
    }))

  it.effect("status503 without retryAfterSeconds sends no Retry-After; status500 answers 500 Error", () =>
    Effect.gen(function*() {
      const { heartbeat, server } = yield* ready
      yield* server.setFaults([
        { route: "heartbeat", kind: "status503", sequence: [true, false] },
        { route: "heartbeat", kind: "status500", sequence: [false, true] }
      ])
      const unavailable = yield* heartbeat
      expect(unavailable.status).toBe(503)
      expect(unavailable.headers.get("retry-after")).toBeNull()
      const failed = yield* heartbeat
      expect(failed.status).toBe(500)
      expect(failed.body).toEqual({ ErrorCode: ErrorBody.ErrorCodes.serverError, Message: expect.any(String) })
      expect((yield* heartbeat).status).toBe(200)
    }))

  it.effect("reset destroys the socket before any processing: fetch rejects, nothing is created", () =>
    Effect.gen(function*() {
      const { server, token } = yield* ready
      yield* server.setFaults([{ route: "createQuote", kind: "reset", times: 1 }])
      const headers = exchangeHeaders(token)
      const error = yield* Effect.flip(postQuote(server, headers, quoteBody(TestData.Cards.success)))
      expect(String(error)).toContain("fetch failed")
      const journal = yield* server.journal
      expect(journal.requests.createQuote).toBe(1)
      expect(journal.transactionsByRequestId[headers.requestId!]).toBeUndefined()
      const entry = journal.entries.at(-1)!
      expect(entry).toMatchObject({ route: "createQuote", faults: ["reset"] })
      expect(entry.status).toBeUndefined()
      expect(yield* server.transactions).toHaveLength(0)
      // The retry the SDK sends: same requestId, previousAttempts + 1. The first attempt never ran, so it creates.
      const retry = yield* postQuote(
        server,
        { ...headers, previousAttempts: "1" },
        quoteBody(TestData.Cards.success)
      )
      expect(retry.status).toBe(201)
    }))

  it.effect("dropAnswer processes the POST, then drops the answer; the retry gets the same transaction", () =>
    Effect.gen(function*() {
      const { server, token } = yield* ready
      yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer", times: 1 }])
      const headers = exchangeHeaders(token)
      const error = yield* Effect.flip(postQuote(server, headers, quoteBody(TestData.Cards.success)))
      expect(String(error)).toContain("fetch failed")
      const journal = yield* server.journal
      const created = journal.transactionsByRequestId[headers.requestId!]!
      expect(created).toHaveLength(1)
      expect(journal.entries.at(-1)).toMatchObject({ status: 201, faults: ["dropAnswer"], transactionId: created[0] })
      const retry = yield* postQuote(server, { ...headers, previousAttempts: "1" }, quoteBody(TestData.Cards.success))
      expect(retry.status).toBe(201)
      expect(retry.body.transactionId).toBe(created[0])
      expect(yield* server.transactions).toHaveLength(1)
    }))

  it.effect("latency delays the answer by a fixed time or a time drawn from a range", () =>
    Effect.gen(function*() {
      const { heartbeat, server } = yield* ready
      const rules: ReadonlyArray<Faults.FaultRule> = [
        { route: "heartbeat", kind: "latency", latencyMillis: 120, sequence: [true] },
        { route: "heartbeat", kind: "latency", latencyMillis: { min: 60, max: 90 }, sequence: [false, true] }
      ]
      // The delays are decided by a generator seeded like the server's (seed 7): the same rules
      // give the same draws, so the injected delays are known exactly, without timing anything.
      const injector = yield* Faults.make({ seed: 7, rules })
      const decided = yield* Effect.forEach([1, 2, 3], () => injector.decide("heartbeat"))
      const [fixedDelay, rangedDelay, plainDelay] = decided.map((decision) => decision.delayMillis)
      expect(fixedDelay).toBe(120)
      expect(rangedDelay).toBeGreaterThanOrEqual(60)
      expect(rangedDelay).toBeLessThanOrEqual(90)
      expect(plainDelay).toBe(0)
      expect(decided[2]!.injected).toEqual([])

      yield* server.setFaults(rules)
      // Lower bounds only (a loaded machine only adds time); 5 ms of timer slack.
      const [fixed, fixedMillis] = yield* timed(heartbeat)
      expect(fixed.status).toBe(200)
      expect(fixedMillis).toBeGreaterThanOrEqual(fixedDelay! - 5)
      const [ranged, rangedMillis] = yield* timed(heartbeat)
      expect(ranged.status).toBe(200)
      expect(rangedMillis).toBeGreaterThanOrEqual(rangedDelay! - 5)
      expect((yield* heartbeat).status).toBe(200)
      // the third request had no latency injected: no rule fired for it
      const journal = yield* server.journal
      expect(journal.entries.slice(-3).map((entry) => entry.faults)).toEqual([["latency"], ["latency"], undefined])
    }))

  it.effect("malformed keeps status and headers but breaks the JSON body; the POST was processed", () =>
    Effect.gen(function*() {
      const { server, token } = yield* ready
      yield* server.setFaults([{ route: "createQuote", kind: "malformed", times: 1 }])
      const headers = exchangeHeaders(token)
      const reply = yield* postQuote(server, headers, quoteBody(TestData.Cards.success))
      expect(reply.status).toBe(201)
      expect(reply.headers.get("content-type")).toBe("application/json")
      expect(reply.headers.get("location")).not.toBeNull()
      expect(reply.body).toBeUndefined()
      expect(() => JSON.parse(reply.text)).toThrow()
      expect(reply.text.startsWith("{\"transactionId\":")).toBe(true)
      const id = reply.headers.get("location")!.split("/").at(-1)!
      expect((yield* getTransaction(server, headers, id)).status).toBe(200)
      // the transaction was created before the answer was garbled: the documented retry gets it back
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[headers.requestId!]).toEqual([id])
      expect(journal.entries.filter((entry) => entry.route === "createQuote").at(-1)).toMatchObject({
        status: 201,
        faults: ["malformed"],
        transactionId: id
      })
      const retry = yield* postQuote(server, { ...headers, previousAttempts: "1" }, quoteBody(TestData.Cards.success))
      expect(retry.status).toBe(201)
      expect(retry.body.transactionId).toBe(id)
      expect(yield* server.transactions).toHaveLength(1)
    }))

  it.effect("malformed on the GET cuts the status body in half, its headers kept", () =>
    Effect.gen(function*() {
      const { server, token } = yield* ready
      const headers = exchangeHeaders(token)
      const id = (yield* postQuote(server, headers, quoteBody(TestData.Cards.instant))).body.transactionId
      const whole = yield* getTransaction(server, headers, id)
      yield* server.setFaults([{ route: "getTransaction", kind: "malformed", times: 1 }])
      const reply = yield* getTransaction(server, headers, id)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toBe("application/json")
      expect(reply.body).toBeUndefined()
      // The first half holds no time of the answer, so it is the same in both.
      expect(reply.text.length).toBe(Math.floor(whole.text.length / 2))
      expect(reply.text).toBe(whole.text.slice(0, reply.text.length))
    }))

  it.effect("stall holds the answer for 2 s, then answers normally", () =>
    Effect.gen(function*() {
      const { heartbeat, server } = yield* ready
      yield* server.setFaults([{ route: "heartbeat", kind: "stall", times: 1 }])
      const [reply, millis] = yield* timed(heartbeat)
      expect(reply.status).toBe(200)
      expect(millis).toBeGreaterThanOrEqual(Faults.stallMillis - 5)
    }), { timeout: 10_000 })

  it.effect("a sequence injects exactly where it says, then stops", () =>
    Effect.gen(function*() {
      const { heartbeat, server } = yield* ready
      yield* server.setFaults([{ route: "heartbeat", kind: "status503", sequence: [true, false, true] }])
      const statuses: Array<number> = []
      for (let i = 0; i < 5; i++) statuses.push((yield* heartbeat).status)
      expect(statuses).toEqual([503, 200, 503, 200, 200])
    }))

  it.effect("a probability is seeded: the same rules give the same pattern", () =>
    Effect.gen(function*() {
      const { heartbeat, server } = yield* ready
      const pattern = Effect.gen(function*() {
        yield* server.setFaults([{ route: "heartbeat", kind: "status503", probability: 0.5 }])
        const statuses: Array<number> = []
        for (let i = 0; i < 24; i++) statuses.push((yield* heartbeat).status)
        return statuses
      })
      const first = yield* pattern
      expect(first).toContain(503)
      expect(first).toContain(200)
      expect(yield* pattern).toEqual(first)
    }))

  it.effect("route any hits the service routes but never the admin API", () =>
    Effect.gen(function*() {
      const { heartbeat, server } = yield* ready
      yield* server.setFaults([{ route: "any", kind: "status500" }])
      expect((yield* heartbeat).status).toBe(500)
      const token = yield* call(`${server.authUrl}${Routes.tokenPath}`, { method: "POST" })
      expect(token.status).toBe(500)
      expect((yield* admin(server, "GET", "/journal")).status).toBe(200)
      expect((yield* admin(server, "POST", "/reset")).status).toBe(204)
      expect((yield* heartbeat).status).toBe(200)
    }))

  it.effect("faults count in the journal per route", () =>
    Effect.gen(function*() {
      const { heartbeat, server } = yield* ready
      yield* server.setFaults([{ route: "heartbeat", kind: "status503", times: 2 }])
      for (let i = 0; i < 3; i++) yield* heartbeat
      const journal = yield* server.journal
      expect(journal.requests.heartbeat).toBe(3)
      expect(journal.entries.filter((entry) => entry.route === "heartbeat").map((entry) => entry.status)).toEqual([
        503,
        503,
        200
      ])
    }))
})

describe("faults from the layer's options", () => {
  it.live("rules given to Sandbox.layer are in force from the start", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      expect((yield* tokenRequest(server, credentialsForm())).status).toBe(503)
      expect((yield* tokenRequest(server, credentialsForm())).status).toBe(200)
      expect((yield* admin(server, "GET", "/faults")).body).toEqual([{ route: "token", kind: "status503", times: 1 }])
    }).pipe(Effect.provide(Sandbox.layer({ faults: [{ route: "token", kind: "status503", times: 1 }] }))))
})

describe("Faults.parseRule", () => {
  it("parses the command-line form", () => {
    expect(Faults.parseRule("createQuote:status503:0.2:retry-after=1")).toEqual(
      Result.succeed({ route: "createQuote", kind: "status503", probability: 0.2, retryAfterSeconds: 1 })
    )
    expect(Faults.parseRule("any:latency:ms=100-300")).toEqual(
      Result.succeed({ route: "any", kind: "latency", latencyMillis: { min: 100, max: 300 } })
    )
    expect(Faults.parseRule("heartbeat:reset:seq=1,0,1")).toEqual(
      Result.succeed({ route: "heartbeat", kind: "reset", sequence: [true, false, true] })
    )
    expect(Faults.parseRule("token:stall:times=2")).toEqual(Result.succeed({ route: "token", kind: "stall", times: 2 }))
  })

  it("refuses unknown routes, kinds, options and out-of-range values", () => {
    for (const text of ["nowhere:reset", "token:explode", "token:reset:colour=red", "token:status503:p=2"]) {
      expect(Result.isFailure(Faults.parseRule(text))).toBe(true)
    }
  })

  it.effect("the injector is deterministic for a seed", () =>
    Effect.gen(function*() {
      const draw = (seed: number) =>
        Effect.gen(function*() {
          const injector = yield* Faults.make({
            seed,
            rules: [{ route: "any", kind: "latency", latencyMillis: { min: 0, max: 1000 }, probability: 0.7 }]
          })
          const delays: Array<number> = []
          for (let i = 0; i < 20; i++) delays.push((yield* injector.decide("getTransaction")).delayMillis)
          return delays
        })
      expect(yield* draw(1)).toEqual(yield* draw(1))
      expect(yield* draw(1)).not.toEqual(yield* draw(2))
    }))

  it.effect("requests of other routes do not advance a rule's counter", () =>
    Effect.gen(function*() {
      const injector = yield* Faults.make({ seed: 0, rules: [{ route: "heartbeat", kind: "reset", times: 1 }] })
      expect((yield* injector.decide("createQuote")).injected).toEqual([])
      expect((yield* injector.decide("admin")).injected).toEqual([])
      expect((yield* injector.decide("heartbeat")).injected).toEqual(["reset"])
      expect((yield* injector.decide("heartbeat")).injected).toEqual([])
    }))
})
