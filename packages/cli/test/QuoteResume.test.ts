/**
 * `gcx quote` after a POST refused at its attempts cap while an attempt of it
 * may have created the quote: the error line ends with the flags that resume
 * it, and they do: the service answers the transaction an earlier attempt
 * created, and creates no second one. A durable quote that failed so (after
 * the workflow's own runs again) names them too, to run without `--durable`.
 */
import { expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { CardCipher, DurableQuotes } from "@gcx/workflow"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { cardArgs, embeddedQuotes, envFor, expectOneErrorLine, gcxInProcess, pin, sandbox } from "./helpers.js"

/** `gcx quote --json` of the success card with the flags that resume `requestId` after `previousAttempts`. */
const resume = (server: Sandbox.Service, requestId: string, previousAttempts: number) =>
  gcxInProcess(
    [
      "quote",
      ...cardArgs(TestData.Cards.success),
      "--request-id",
      requestId,
      "--previous-attempts",
      String(previousAttempts),
      "--json"
    ],
    envFor(server)
  )

layer(sandbox({ timeScale: 0.01 }), { excludeTestServices: true })("gcx quote: a refused POST", (it) => {
  it.effect("names --request-id and --previous-attempts, which resume it: the original transaction", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      // every answer lost after processing: the first attempt created the transaction
      yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer" }])
      const refused = yield* gcxInProcess(["quote", ...cardArgs(TestData.Cards.success)], envFor(server)).pipe(
        Effect.ensuring(server.setFaults([]))
      )
      expect(refused.code).toBe(5)
      const line = expectOneErrorLine(refused.stderr, "TransportError", "the quote may exist: resume it with")
      const [, requestId, previousAttempts] = /--request-id (\S+) --previous-attempts (\d+)$/.exec(line) ?? []
      expect(previousAttempts).toBe("4")
      const created = (yield* server.journal).transactionsByRequestId[requestId!]
      expect(created).toHaveLength(1)

      const resumed = yield* resume(server, requestId!, 4)
      expect(resumed.code).toBe(0)
      expect(JSON.parse(resumed.stdout.split("\n")[0]!)).toMatchObject({
        _tag: "Submitted",
        requestId,
        transactionId: created![0]
      })
      const journal = yield* server.journal
      expect(journal.transactionsByRequestId[requestId!]).toEqual(created)
      const posts = journal.entries.filter((entry) => entry.route === "createQuote" && entry.requestId === requestId)
      expect(posts.map((entry) => entry.previousAttempts)).toEqual([0, 1, 2, 3, 4])
    }))

  it.effect(
    "a durable quote failed so after the workflow's runs again: quote and result name the flags without --durable; they resume it",
    () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-quote-resume-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
        const env = {
          ...envFor(server),
          GCX_DATABASE_FILE: Path.join(directory, "gcx.db"),
          GCX_DATA_KEY: CardCipher.generateKey()
        }
        const requestId = "durable-resume-without-durable"
        const input = {
          cardNumber: TestData.Cards.success,
          pinNumber: pin,
          productLineId: TestData.defaultProductLineId
        }
        // the durable quote, run to its failure in this process (short pauses): every answer lost
        yield* server.setFaults([{ route: "createQuote", kind: "dropAnswer" }])
        yield* Effect.flatMap(
          DurableQuotes.DurableQuotes,
          (quotes) => Effect.flip(quotes.execute(input, { requestId }))
        )
          .pipe(
            Effect.provide(
              embeddedQuotes(server, env.GCX_DATABASE_FILE, env.GCX_DATA_KEY, ["50 millis", "50 millis"])
            ),
            Effect.ensuring(server.setFaults([]))
          )
        const created = (yield* server.journal).transactionsByRequestId[requestId]
        expect(created).toHaveLength(1)

        // `gcx quote --durable` with its requestId shows the stored failure, and how to learn its quote
        const failed = yield* gcxInProcess(
          ["quote", ...cardArgs(TestData.Cards.success), "--durable", "--request-id", requestId],
          env
        )
        expect(failed.code).toBe(5)
        const hint =
          /; the quote may exist: resume it without --durable, with --request-id durable-resume-without-durable --previous-attempts 12$/
        expect(expectOneErrorLine(failed.stderr, "TransportError")).toMatch(hint)
        // so does `gcx result`, which shows the stored failure
        const shown = yield* gcxInProcess(["result", requestId], env)
        expect(shown.code).toBe(5)
        expect(expectOneErrorLine(shown.stderr, "TransportError")).toMatch(hint)
        const resumed = yield* resume(server, requestId, 12)
        expect(resumed.code).toBe(0)
        expect(JSON.parse(resumed.stdout.split("\n")[0]!)).toMatchObject({
          _tag: "Submitted",
          transactionId: created![0]
        })
        expect((yield* server.journal).transactionsByRequestId[requestId]).toEqual(created)
      }).pipe(Effect.scoped),
    60_000
  )

  it.effect("a refusal after which nothing exists names no flags to resume it", () =>
    Effect.gen(function*() {
      const server = yield* Sandbox.SandboxServer
      const invalid = yield* gcxInProcess(["quote", ...cardArgs(TestData.Cards.success, "9999")], envFor(server))
      expect(invalid.code).toBe(2)
      expect(expectOneErrorLine(invalid.stderr, "InvalidRequest")).not.toContain("--previous-attempts")
      // 503s to the cap: refused before processing, every time
      yield* server.setFaults([{ route: "createQuote", kind: "status503" }])
      const unavailable = yield* gcxInProcess(["quote", ...cardArgs(TestData.Cards.success)], envFor(server)).pipe(
        Effect.ensuring(server.setFaults([]))
      )
      expect(unavailable.code).toBe(5)
      expect(expectOneErrorLine(unavailable.stderr, "ServiceUnavailable")).not.toContain("--previous-attempts")
    }))
})
