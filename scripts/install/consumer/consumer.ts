// A strict TypeScript consumer (NodeNext, exactOptionalPropertyTypes): gcx's public API as an
// application types it, its errors handled by tag. Checked with `tsc --noEmit`, never run.
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Cli, ExitCode } from "@gcx/cli"
import { Errors, QuoteEvent } from "@gcx/core"
import type { ExchangeConfig } from "@gcx/http"
import { ExchangeClient } from "@gcx/http"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Sandbox, TestData } from "@gcx/sandbox"
import { BigDecimal, Console, Effect, Layer, Stream } from "effect"
import * as PublicApi from "./api.js"

const GcxLive = QuotePoller.layer().pipe(
  Layer.provideMerge(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(NodeHttpClient.layerUndici)
)

/** What the customer sees for one card: every customer-facing failure handled by its tag. */
const answerFor = (cardNumber: string): Effect.Effect<string, Errors.QuoteFailure, QuotePoller.QuotePoller> =>
  QuotePoller.QuotePoller.pipe(
    Effect.flatMap((poller) => poller.getQuote({ cardNumber, pinNumber: "1234", productLineId: "1000" })),
    Effect.map((quote) => `We offer ${BigDecimal.format(quote.exchangeCardValue)} for this card.`),
    Effect.catchTags({
      InvalidCard: (error) => Effect.succeed(error.userMessage ?? "Check the card number and PIN."),
      CardValueOutOfRange: () => Effect.succeed("This card has no usable balance."),
      MerchantUnavailable: () => Effect.succeed("The merchant cannot be reached; try later."),
      PollTimeout: (error) => Effect.succeed(`Still checking transaction ${error.transactionId}.`),
      InvalidCardInput: () => Effect.succeed("That is not a card number.")
    })
  )

const program = Effect.gen(function*() {
  const bus = yield* QuoteEvents.QuoteEvents
  const events = yield* bus.subscribe
  yield* events.pipe(Stream.filter(QuoteEvent.isTerminal), Stream.take(1), Stream.runDrain, Effect.forkChild)
  const answer = yield* answerFor(TestData.Cards.success).pipe(
    Effect.catch((error) => Effect.succeed(`failed: ${error._tag} (${Errors.groupOf(error)})`))
  )
  yield* Console.log(answer)
})

const _sandbox: Effect.Effect<ExchangeConfig.Options, unknown, never> = Effect.scoped(
  Effect.map(Sandbox.make({ logLevel: "None" }), Sandbox.clientOptions)
)
const _version: string = Cli.version
const _exitCode: typeof ExitCode = ExitCode
export const api: typeof PublicApi = PublicApi

program.pipe(Effect.scoped, Effect.provide(GcxLive), NodeRuntime.runMain)
