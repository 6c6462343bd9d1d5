/**
 * The checkout example's backend (examples/checkout/server.ts) in front of a
 * real `gcx serve` (a separate process, embedded) and a sandbox, called as a
 * browser of another site or a script would: it takes only JSON submissions
 * from its own page, sends no CORS headers, and proxies only the quotes it
 * created, not the other quotes of the shop's key.
 */
import { expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import * as Checkout from "../checkout/server.js"
import { startGateway } from "./utils/gateway.js"

const card = { cardNumber: TestData.Cards.instant, pinNumber: "7391", productLineId: TestData.defaultProductLineId }

layer(Sandbox.layer({ timeScale: 0.25, logLevel: "None" }), { excludeTestServices: true, timeout: 120_000 })(
  "examples/checkout/server.ts",
  (it) => {
    it.effect(
      "refuses another site's and non-JSON submissions; proxies only its own quotes; no CORS headers",
      () =>
        Effect.gen(function*() {
          const sandbox = yield* Sandbox.SandboxServer
          const gateway = yield* startGateway(sandbox)
          const backend = yield* Effect.acquireRelease(
            Effect.promise(() => Checkout.start({ gatewayUrl: gateway.url, apiKey: gateway.apiKey, maxQuotes: 2 })),
            (backend) => Effect.sync(() => backend.close())
          )
          const call = (path: string, init: RequestInit = {}) =>
            Effect.promise(async () => {
              const answer = await fetch(`${backend.url}${path}`, init)
              const text = await answer.text()
              return { status: answer.status, headers: answer.headers, text }
            })
          const post = (headers: Record<string, string>, body = JSON.stringify(card)) =>
            call("/api/quotes", { method: "POST", headers, body })
          const json = { "Content-Type": "application/json" }

          // CSRF: another site's page (a form, a no-cors fetch), or a body that is not JSON
          const foreign = yield* post({ ...json, Origin: "https://evil.example" })
          expect(foreign.status).toBe(403)
          expect(JSON.parse(foreign.text).error.code).toBe("invalid_request")
          expect((yield* post({ ...json, Origin: "null" })).status).toBe(403)
          expect((yield* post({ "Content-Type": "text/plain" })).status).toBe(415)
          expect((yield* post({ "Content-Type": "application/x-www-form-urlencoded" })).status).toBe(415)
          expect((yield* post({})).status).toBe(415)
          const preflight = yield* call("/api/quotes", {
            method: "OPTIONS",
            headers: { Origin: "https://evil.example", "Access-Control-Request-Method": "POST" }
          })
          expect(preflight.headers.get("access-control-allow-origin")).toBeNull()

          // the page's own origin (and a script without Origin) submit
          const own = yield* post({ "Content-Type": "application/json; charset=utf-8", Origin: backend.url })
          expect(own.status, own.text).toBe(202)
          expect(own.headers.get("access-control-allow-origin")).toBeNull()
          const id = JSON.parse(own.text).id as string
          expect((yield* call(`/api/quotes/${id}`)).status).toBe(200)
          const events = yield* call(`/api/quotes/${id}/events`)
          expect(events.status).toBe(200)
          expect(events.text).toMatch(/^event: Completed$/m)

          // a quote of the same key submitted elsewhere (another page, another system): not through this backend
          const other = yield* Effect.promise(() =>
            fetch(`${gateway.url}/v1/quotes`, {
              method: "POST",
              headers: { ...json, Authorization: `Bearer ${gateway.apiKey}`, "Idempotency-Key": "elsewhere-1" },
              body: JSON.stringify(card)
            }).then((answer) => answer.json() as Promise<{ id: string }>)
          )
          for (const path of [`/api/quotes/${other.id}`, `/api/quotes/${other.id}/events`]) {
            const answer = yield* call(path)
            expect(answer.status, path).toBe(404)
            expect(JSON.parse(answer.text).error.code).toBe("not_found")
          }

          // bounded: past `maxQuotes` (2 here), the oldest id is forgotten
          for (let index = 0; index < 2; index++) expect((yield* post(json)).status).toBe(202)
          expect((yield* call(`/api/quotes/${id}`)).status).toBe(404)
        }),
      { timeout: 120_000 }
    )
  }
)
