// A durable quote embedded on SQLite, as docs/durable.md's first program, in a plain Node ES module:
// run before the optional peers are installed, so `@gcx/workflow` must load and run without
// `@effect/sql-pg` (PostgreSQL's client, needed by runners only). Prints the completed values.
import { NodeHttpClient } from "@effect/platform-node"
import { ExchangeClient } from "@gcx/http"
import { Sandbox, TestData } from "@gcx/sandbox"
import { CardCipher, DurableQuotes, Embedded } from "@gcx/workflow"
import { BigDecimal, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "gcx-install-durable-"))

const program = Effect.gen(function*() {
  const server = yield* Sandbox.make({ logLevel: "None" })
  const durable = Embedded.layerQuotes({ filename: Path.join(directory, "gcx.db") }).pipe(
    Layer.provide(CardCipher.layer(CardCipher.generateKey())),
    Layer.provide(ExchangeClient.layerWith(Sandbox.clientOptions(server))),
    Layer.provide(NodeHttpClient.layerUndici)
  )
  const quote = yield* DurableQuotes.DurableQuotes.pipe(
    Effect.flatMap((quotes) =>
      quotes.execute({
        cardNumber: TestData.Cards.instant,
        pinNumber: "1234",
        productLineId: TestData.defaultProductLineId
      })
    ),
    Effect.provide(durable)
  )
  return {
    _tag: "Completed",
    transactionId: quote.transactionId,
    actualCardValue: BigDecimal.format(quote.actualCardValue),
    exchangeCardValue: BigDecimal.format(quote.exchangeCardValue)
  }
})

try {
  console.log(JSON.stringify(await Effect.runPromise(Effect.scoped(program))))
} finally {
  Fs.rmSync(directory, { recursive: true, force: true })
}
