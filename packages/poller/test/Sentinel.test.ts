import { describe, expect, it } from "@effect/vitest"
import { QuoteEvent } from "@gcx/core"
import { Capture, Sandbox, TestData } from "@gcx/sandbox"
import { Effect, Exit, Fiber, Layer, Stream } from "effect"
import { QuoteEvents, QuotePoller } from "../src/index.js"
import { pollerLayer } from "./fixtures.js"

/** A partner whose secret and API key are sentinels, and sentinel cards and PINs. */
const partner: TestData.Partner = {
  clientId: "sentinel-partner",
  clientSecret: "SENTINEL-SECRET-6c1f",
  apiKey: "SENTINEL-APIKEY-93ad",
  creatorId: 4242
}
const pins = ["SENTINELPIN1", "SENTINELPIN2"]
const cards = ["6006123456789012345", "6006987654321098765", TestData.Cards.notAccepted]

describe("secret hygiene of the poller", () => {
  it.live("no secret, token, PIN or full card number reaches a log, span, event or error", () =>
    Effect.gen(function*() {
      const capture = Capture.make()
      const outputs: Array<string> = []
      const program = Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        yield* server.setFaults([
          { route: "getTransaction", kind: "status503", sequence: [true, false, true] },
          { route: "createQuote", kind: "dropAnswer", sequence: [false, true] }
        ])
        const poller = yield* QuotePoller.QuotePoller
        const bus = yield* QuoteEvents.QuoteEvents
        const all = yield* bus.subscribe
        const busFiber = yield* all.pipe(
          Stream.runForEach((event) => Effect.sync(() => outputs.push(JSON.stringify(QuoteEvent.encode(event))))),
          Effect.forkChild
        )
        for (const [i, cardNumber] of cards.entries()) {
          const exit = yield* poller.quote({ cardNumber, pinNumber: pins[i % 2]!, productLineId: "1000" }).pipe(
            Stream.runCollect,
            Effect.exit
          )
          outputs.push(String(exit), JSON.stringify(exit))
          if (Exit.isSuccess(exit)) {
            for (const event of exit.value) {
              outputs.push(String(event), JSON.stringify(QuoteEvent.encode(event)))
            }
          }
        }
        // Refused before any I/O, with the card data in the input.
        const refused = yield* Effect.exit(
          poller.getQuote({ cardNumber: `${cards[0]}\n`, pinNumber: `${pins[0]}\u0000`, productLineId: "1000" })
        )
        outputs.push(String(refused), JSON.stringify(refused))
        yield* server.setFaults([])
        yield* Effect.sleep("50 millis")
        yield* Fiber.interrupt(busFiber)
      }).pipe(
        Effect.scoped,
        Effect.provide(
          Layer.unwrap(
            Effect.map(
              Sandbox.SandboxServer,
              (server) => pollerLayer(server, { client: Sandbox.clientOptions(server, partner) })
            )
          )
        ),
        Effect.provide(Sandbox.layer({ timeScale: 0.02, partners: [partner], logLevel: "Info" })),
        Effect.provide(Capture.layer(capture))
      )
      yield* program
      const haystack = [Capture.text(capture), ...outputs].join("\n")
      // Access tokens are JWTs: none may appear anywhere.
      // The run did something worth scanning: events, logs and spans were captured.
      expect(outputs.length).toBeGreaterThan(10)
      expect(capture.spans.some((span) => span.name === "ExchangeClient.createQuote")).toBe(true)
      expect(capture.lines.length).toBeGreaterThan(0)
      expect(haystack).toContain("****2345")
      expect(Capture.scan(haystack, [partner.clientSecret, partner.apiKey, ...pins, ...cards])).toEqual([])
      expect(haystack).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/)
    }))
})
