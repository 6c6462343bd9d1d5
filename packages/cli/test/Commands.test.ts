/**
 * `gcx heartbeat`, `quote`, `watch` and the configuration, each run as a
 * separate process against a sandbox in the test process; their output,
 * `--json` events and exit codes.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { QuoteEvent } from "@gcx/core"
import { Sandbox, TestData } from "@gcx/sandbox"
import { BigDecimal, Effect, Schema } from "effect"
import { cardArgs, entries, envFor, expectOneErrorLine, gcx, lines, sandbox, spawn } from "./helpers.js"

const decodeEvent = Schema.decodeUnknownEffect(QuoteEvent.QuoteEvent)

/** Every line of stdout decoded as a QuoteEvent (fails the test on a line that does not decode). */
const events = (stdout: string) => Effect.forEach(lines(stdout), (line) => decodeEvent(JSON.parse(line)))

describe.concurrent("gcx", () => {
  // 0.05: the 2 s card completes in 100 ms, the slow one in 1.5 s
  layer(sandbox({ timeScale: 0.05 }), { excludeTestServices: true })("against a sandbox", (it) => {
    it.effect("heartbeat prints the answer and the round-trip time; a flag wins over its variable", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const text = yield* gcx(["heartbeat"], { env: envFor(server) })
        expect(text.code).toBe(0)
        expect(text.stdout).toMatch(
          new RegExp(`^heartbeat OK: HTTP 200 from ${server.baseUrl} in \\d+ ms \\(\\d+ ms with the token request\\)`)
        )
        expect(text.stderr).toBe("")

        const json = yield* gcx(["heartbeat", "--json", "--base-url", server.baseUrl], {
          env: { ...envFor(server), GCX_BASE_URL: "http://127.0.0.1:9" }
        })
        expect(json.code).toBe(0)
        const answer = JSON.parse(json.stdout)
        expect(answer).toMatchObject({ ok: true, httpStatus: 200, baseUrl: server.baseUrl, attempts: 1 })
        expect(answer.roundTripMillis).toBeTypeOf("number")
      }))

    it.effect("quote --json prints one QuoteEvent per line and ends with the completed quote", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* gcx(["quote", ...cardArgs(TestData.Cards.success), "--json"], { env: envFor(server) })
        expect(output.code).toBe(0)
        const decoded = yield* events(output.stdout)
        expect(decoded[0]?._tag).toBe("Submitted")
        expect(decoded[0]).toMatchObject({ card: "****0001", productLineId: "1000" })
        const tags = decoded.map((event) => event._tag)
        expect(tags).toContain("Progress")
        expect(tags.filter((tag) => tag === "StepCompleted")).toHaveLength(2)
        const last = decoded.at(-1)!
        expect(last._tag).toBe("Completed")
        if (last._tag !== "Completed") return
        expect(BigDecimal.equals(last.quote.actualCardValue, BigDecimal.fromStringUnsafe("100"))).toBe(true)
        expect(BigDecimal.equals(last.quote.exchangeCardValue, BigDecimal.fromStringUnsafe("85"))).toBe(true)
        expect(new Set(decoded.map((event) => event.transactionId)).size).toBe(1)
      }))

    it.effect("quote on a pipe prints one plain line per event and ends with the values", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* gcx(["quote", ...cardArgs(TestData.Cards.success)], { env: envFor(server) })
        expect(output.code).toBe(0)
        const printed = lines(output.stdout)
        expect(printed[0]).toMatch(/^submitted +[0-9A-Z]{26} +card \*\*\*\*0001 +product 1000/)
        expect(printed.at(-1)).toMatch(/^completed +[0-9A-Z]{26} +actual 100\.00 +exchange 85\.00$/)
        expect(output.stdout).not.toContain("\u001b[")
      }))

    it.effect("a card outcome exits 3 with the user message in one line", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* gcx(["quote", ...cardArgs(TestData.Cards.invalid)], { env: envFor(server) })
        expect(output.code).toBe(3)
        expect(lines(output.stdout).at(-1)).toMatch(/^failed +[0-9A-Z]{26} +InvalidCard exchange\.invalid\.card$/)
        expectOneErrorLine(
          output.stderr,
          "the card was refused",
          "exchange.invalid.card",
          "The card number or PIN is not valid"
        )
      }))

    it.effect("a merchant outcome exits 4; --json ends with the Failed event", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* gcx(["quote", ...cardArgs(TestData.Cards.merchantUnavailable), "--json"], {
          env: envFor(server)
        })
        expect(output.code).toBe(4)
        const last = (yield* events(output.stdout)).at(-1)!
        expect(last._tag).toBe("Failed")
        if (last._tag === "Failed") expect(last.error._tag).toBe("MerchantUnavailable")
        expectOneErrorLine(output.stderr, "retry later", "Please try again later")
      }))

    it.effect("a quote past its deadline exits 5 with its transaction id; watch resumes it to the end", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const timedOut = yield* gcx(["quote", ...cardArgs(TestData.Cards.slow), "--deadline", "0.2"], {
          env: envFor(server)
        })
        expect(timedOut.code).toBe(5)
        const transactionId = /gcx watch ([0-9A-Z]{26})/.exec(timedOut.stderr)?.[1]
        expect(transactionId).toBeDefined()
        expectOneErrorLine(timedOut.stderr, "PollTimeout", `gcx watch ${transactionId}`)

        const watched = yield* gcx(["watch", transactionId!, "--json"], { env: envFor(server) })
        expect(watched.code).toBe(0)
        const decoded = yield* events(watched.stdout)
        expect(decoded.every((event) => event.transactionId === transactionId)).toBe(true)
        expect(decoded.at(-1)?._tag).toBe("Completed")
        const journal = yield* server.journal
        expect(journal.transactionsByRequestId).toSatisfy((byRequest: Record<string, ReadonlyArray<string>>) =>
          Object.values(byRequest).flat().filter((id) => id === transactionId).length === 1
        )
      }))

    it.effect("watch of an unknown transaction exits 2", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const output = yield* gcx(["watch", "0000000000000000000000NONE"], { env: envFor(server) })
        expect(output.code).toBe(2)
        expectOneErrorLine(output.stderr, "TransactionNotFound")
      }))

    it.effect("invalid card input and refused credentials exit 2", () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const input = yield* gcx(["quote", "--card", " ", "--pin", "1", "--product", "1000"], { env: envFor(server) })
        expect(input.code).toBe(2)
        expectOneErrorLine(input.stderr, "InvalidCardInput", "card.cardNumber must not be empty")

        const secret = yield* gcx(["heartbeat"], { env: { ...envFor(server), GCX_CLIENT_SECRET: "wrong-secret" } })
        expect(secret.code).toBe(2)
        expectOneErrorLine(secret.stderr, "TokenError", "HTTP 401")
        expect(secret.stderr).not.toContain("wrong-secret")
      }))
  })

  layer(sandbox({ faults: [{ route: "createQuote", kind: "status503" }] }), { excludeTestServices: true })(
    "against a failing service",
    (it) => {
      it.effect("a service failure exits 5 after the retries", () =>
        Effect.gen(function*() {
          const server = yield* Sandbox.SandboxServer
          const output = yield* gcx(["quote", ...cardArgs(TestData.Cards.success)], { env: envFor(server) })
          expect(output.code).toBe(5)
          expectOneErrorLine(output.stderr, "the service failed", "ServiceUnavailable", "HTTP 503", "4 attempts")
          expect((yield* server.journal).requests.createQuote).toBe(4)
        }))
    }
  )

  describe("configuration", () => {
    it.live("a partial or malformed configuration exits 2 naming the variables", () =>
      Effect.gen(function*() {
        // one setting given (a flag), so no embedded sandbox: every required variable must be there
        const output = yield* gcx(["heartbeat", "--client-id", "someone"], {
          env: { GCX_BASE_URL: "not-a-url", GCX_API_KEY: "configured-key" }
        })
        expect(output.code).toBe(2)
        expectOneErrorLine(
          output.stderr,
          "configuration: GCX_BASE_URL must be an absolute http(s) URL",
          "GCX_AUTH_URL is not set",
          "GCX_CLIENT_SECRET is not set"
        )
        expect(output.stderr).not.toContain("configured-key")
        expect(output.stderr).not.toContain("GCX_CLIENT_ID")
      }))

    it.live("with nothing configured, the embedded sandbox is used and said so on stderr", () =>
      Effect.gen(function*() {
        const output = yield* gcx(["heartbeat"])
        expect(output.code).toBe(0)
        expect(output.stderr).toMatch(
          /^gcx: no GCX_\* connection settings \(--embedded\): using the embedded sandbox at http:\/\/127\.0\.0\.1:\d+\n$/
        )
        expect(output.stdout).toMatch(/^heartbeat OK: HTTP 200/)
      }))

    it.live("the package's bin runs the same CLI; a missing flag exits 2", () =>
      Effect.gen(function*() {
        // the bin runs the build in dist/; with the source condition and tsx, the sources (no build needed)
        const output = yield* spawn(entries.executable, ["quote", "--card", "1", "--pin", "2"], {
          env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import tsx` }
        })
        expect(output.code).toBe(2)
        expect(output.stderr).toContain("--product")
      }))
  })
})
