/**
 * Issue 20, item 2, as the user sees it: a service that echoes the card number
 * into SVC-TRACE-ID, the Location and its Error body, with a 900 KB ErrorCode.
 * `gcx` prints no card number, no trace id that is not one, and an `error:`
 * line of a few hundred characters, not of 900 KB.
 */
import { describe, expect, it } from "@effect/vitest"
import { Routes } from "@gcx/core"
import { TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { cardArgs, gcx, lines } from "./helpers.js"

const cardNumber = TestData.Cards.success
const transactionId = "1JXX657P9VCKN74WVFNBH75GWR"

const answer = (response: Http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", "svc-trace-id": cardNumber, ...headers })
  response.end(JSON.stringify(body))
}

/** The service's answers, by method and path; every one echoes the card number. */
const handle = (request: Http.IncomingMessage, response: Http.ServerResponse) => {
  const route = `${request.method} ${request.url}`
  if (route === `POST ${Routes.tokenPath}`) {
    return answer(response, 200, { access_token: "hostile-token", expires_in: 3600, token_type: "Bearer" })
  }
  if (route === `GET ${Routes.heartbeatPath}`) return answer(response, 200, {})
  if (route === `POST ${Routes.quotePath()}`) {
    return answer(response, 201, { transactionId, isCompleted: false, expectedCompletionTime: 0 }, {
      location: `${Routes.transactionPath(transactionId)}?card=${cardNumber}`
    })
  }
  answer(response, 422, {
    ErrorCode: `exchange.odd.${cardNumber}.${"x".repeat(900_000)}`,
    Message: `card ${cardNumber} is odd`,
    UserMessage: `Your card ${cardNumber} is odd`,
    MoreInfoUrl: `https://example.test/${cardNumber}`
  })
}

/** The service on loopback, closed with the scope; the GCX_* variables that point gcx at it. */
const hostile = Effect.acquireRelease(
  Effect.callback<Http.Server>((resume) => {
    const server = Http.createServer((request, response) => {
      request.resume()
      request.on("end", () => handle(request, response))
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map((server) => {
  const url = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`
  return {
    GCX_ENV: "custom",
    GCX_BASE_URL: url,
    GCX_AUTH_URL: url,
    GCX_STAGE: "",
    GCX_CLIENT_ID: "hostile-partner",
    GCX_CLIENT_SECRET: "hostile-secret",
    GCX_API_KEY: "hostile-api-key"
  }
}))

describe("a service echoing the card number, with a 900 KB ErrorCode", () => {
  it.live(
    "gcx prints no card number and no text over the caps: heartbeat, quote, --json",
    () =>
      Effect.gen(function*() {
        const env = yield* hostile
        // gcx checks every output for the scenario cards (`expectNoSecrets`)
        const [heartbeat, heartbeatJson, quote, quoteJson] = yield* Effect.all([
          gcx(["heartbeat"], { env }),
          gcx(["heartbeat", "--json"], { env }),
          gcx(["quote", ...cardArgs(cardNumber), "--poll-interval", "20"], { env }),
          gcx(["quote", ...cardArgs(cardNumber), "--poll-interval", "20", "--json"], { env })
        ], { concurrency: "unbounded" })
        expect(heartbeat.code).toBe(0)
        expect(heartbeat.stdout).toMatch(/^heartbeat OK/)
        expect(heartbeat.stdout).not.toContain("trace")
        expect(JSON.parse(heartbeatJson.stdout)).not.toHaveProperty("traceId")
        expect(quote.code).not.toBe(0)
        // the client's warnings that it dropped the trace ids (the token endpoint's and the service's), and one error line
        const [first, second, error, ...rest] = lines(quote.stderr)
        expect(rest).toEqual([])
        for (const warning of [first, second]) expect(warning).toMatch(/level=WARN .*SVC-TRACE-ID .* reason=digits/)
        expect(error).toMatch(/^error: .*exchange\.odd\.\*\*\*\*0001\.x+… \(cut from 900,030 characters\)/)
        expect(error!.length).toBeLessThan(4 * 1024)
        expect(quoteJson.code).not.toBe(0)
        const events = lines(quoteJson.stdout).map((line) => JSON.parse(line) as Record<string, unknown>)
        expect(events.map((event) => event._tag)).toEqual(["Submitted", "Failed"])
        expect(events[0]).not.toHaveProperty("traceId")
        expect(events[0]!.location).toContain("****")
        for (const line of lines(quoteJson.stdout)) expect(line.length).toBeLessThan(6 * 1024)
        for (const output of [heartbeat, heartbeatJson, quote, quoteJson]) {
          expect(`${output.stdout}${output.stderr}`).not.toMatch(/\d{8}/)
        }
      }).pipe(Effect.scoped),
    120_000
  )
})
