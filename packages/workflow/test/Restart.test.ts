import { expect, layer } from "@effect/vitest"
import { Sandbox, TestData } from "@gcx/sandbox"
import { Duration, Effect } from "effect"
import { randomBytes, randomInt } from "node:crypto"
import * as Net from "node:net"
import { CardCipher, DurableQuotes } from "../src/index.js"
import { clientOptions, dumpTables, jwtShape, quotesLayer, sandbox, tempDatabase } from "./fixtures.js"
import { type ChildInput, runAndKill } from "./fixtures/restart.js"

const count = 30

/** A loopback port with nothing listening on it: every connection to it is refused. */
const closedPort = Effect.callback<number>((resume) => {
  const server = Net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

const sentinel = (label: string) => `SENTINEL-${label}-${randomBytes(6).toString("hex")}`

/** The partner of the run: its secret and API key are sentinels to scan for. */
const partner: TestData.Partner = {
  clientId: "restart-partner",
  clientSecret: sentinel("SECRET"),
  apiKey: sentinel("APIKEY"),
  creatorId: 7101
}

/** Distinct cards (balances derived from the number, about 1 s at this time scale), sentinel PINs. */
const quotes = Array.from({ length: count }, (_, index) => ({
  requestId: `restart-${index}-${randomBytes(4).toString("hex")}`,
  card: {
    cardNumber: `4929${String(randomInt(0, 1e12)).padStart(12, "0")}`,
    pinNumber: `pin-${randomBytes(5).toString("hex")}`,
    productLineId: TestData.defaultProductLineId
  }
}))

layer(sandbox({ partners: [partner], timeScale: 0.5 }), { excludeTestServices: true })("embedded restart", (it) => {
  it.effect(
    "a runner SIGKILLed mid-run and restarted completes every quote, with one transaction each; no card data, secret or token at rest",
    () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const database = yield* tempDatabase
        const dataKey = CardCipher.generateKey()
        const client = clientOptions(server, Sandbox.clientOptions(server, partner))
        const input: ChildInput = { database, client, quotes }

        const [killTime, killed] = yield* Effect.timed(runAndKill(input, dataKey, Math.floor(count / 3)))
        expect(killed.submitted).toEqual(quotes.map((quote) => quote.requestId))
        // The kill landed mid-run: some quotes were still pending at the service.
        const atKill = yield* server.transactions
        expect(atKill.filter((transaction) => transaction.state === "pending").length).toBeGreaterThan(0)
        expect(killed.completed.length).toBeLessThan(count)

        // The restart: a fresh runner on the same file resumes every quote.
        yield* Effect.gen(function*() {
          const durable = yield* DurableQuotes.DurableQuotes
          const [resumeTime, results] = yield* Effect.timed(
            Effect.forEach(quotes, ({ requestId }) => durable.result(requestId), {
              concurrency: "unbounded"
            })
          )
          console.log(
            `restart: ${count} quotes, killed after ${
              Duration.format(killTime)
            } with ${killed.completed.length} completed; the restarted runner completed them all in ${
              Duration.format(resumeTime)
            }`
          )
          const journal = yield* server.journal
          for (const [index, { requestId }] of quotes.entries()) {
            expect(journal.transactionsByRequestId[requestId]).toEqual([results[index]!.transactionId])
          }
          const posts = journal.entries.filter((entry) => entry.route === "createQuote")
          expect(posts.filter((entry) => entry.status === 400)).toEqual([])
          expect(new Set(posts.map((entry) => entry.transactionId)).size).toBe(count)

          // At rest: every table of the database, dumped; the run is in it, and nothing secret.
          const dump = yield* dumpTables
          expect(dump.tables).toEqual(expect.arrayContaining(["cluster_messages", "gcx_request_ids"]))
          expect(dump.text).toContain(quotes[0]!.requestId)
          expect(dump.text).toContain(`****${quotes[0]!.card.cardNumber.slice(-4)}`)
          const sentinels = [
            partner.clientSecret,
            partner.apiKey,
            Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString("base64"),
            dataKey,
            ...quotes.map((quote) => quote.card.cardNumber),
            ...quotes.map((quote) => quote.card.pinNumber)
          ]
          expect(sentinels.filter((value) => dump.text.includes(value)).map((value) => `${value.slice(0, 6)}…`))
            .toEqual([])
          expect(jwtShape.test(dump.text)).toBe(false)
        }).pipe(
          Effect.provide(
            quotesLayer(server, database, { client: Sandbox.clientOptions(server, partner), key: dataKey })
          )
        )
      }).pipe(Effect.scoped),
    90_000
  )

  it.effect(
    "key rotation: quotes sealed under the old key and killed before their POST complete after a restart with the new key and the old one as previous",
    () =>
      Effect.gen(function*() {
        const server = yield* Sandbox.SandboxServer
        const database = yield* tempDatabase
        const [oldKey, newKey] = [CardCipher.generateKey(), CardCipher.generateKey()]
        const rotated = quotes.slice(0, 6).map((quote) => ({ ...quote, requestId: `rotated-${quote.requestId}` }))
        // The child seals under the old key; its POSTs find nothing listening and wait 30 s to retry: it is killed first.
        const client = clientOptions(server, {
          ...Sandbox.clientOptions(server, partner),
          baseUrl: `http://127.0.0.1:${yield* closedPort}`,
          retry: { baseDelay: "30 seconds", maxDelay: "30 seconds" }
        })
        const posts = Effect.map(server.journal, (journal) =>
          journal.entries.filter((entry) =>
            entry.route === "createQuote" && entry.requestId?.startsWith("rotated-")
          ))
        yield* runAndKill({ database, client, quotes: rotated }, oldKey, 0)
        // every card is still sealed, unsent: the restarted runner must open each with the previous key
        expect(yield* posts).toEqual([])

        const results = yield* Effect.flatMap(
          DurableQuotes.DurableQuotes,
          (durable) =>
            Effect.forEach(rotated, ({ requestId }) => durable.result(requestId), { concurrency: "unbounded" })
        ).pipe(
          Effect.provide(
            quotesLayer(server, database, {
              client: Sandbox.clientOptions(server, partner),
              key: newKey,
              previousKey: oldKey
            })
          )
        )
        const journal = yield* server.journal
        for (const [index, { requestId }] of rotated.entries()) {
          expect(journal.transactionsByRequestId[requestId]).toEqual([results[index]!.transactionId])
        }
        expect((yield* posts).filter((entry) => entry.status === 400)).toEqual([])
      }).pipe(Effect.scoped),
    60_000
  )
})
