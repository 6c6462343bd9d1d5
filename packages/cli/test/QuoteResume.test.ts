/**
 * `gcx quote` after a POST refused at its attempts cap while an attempt of it
 * may have created the quote: the error line ends with the flags that resume
 * it, and they do: the service answers the transaction an earlier attempt
 * created, and creates no second one.
 */
import { expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Effect } from "effect"
import { cardArgs, envFor, expectOneErrorLine, gcxInProcess, sandbox } from "./helpers.js"

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

      const resumed = yield* gcxInProcess(
        [
          "quote",
          ...cardArgs(TestData.Cards.success),
          "--request-id",
          requestId!,
          "--previous-attempts",
          "4",
          "--json"
        ],
        envFor(server)
      )
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
