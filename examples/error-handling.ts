/**
 * error-handling: what to tell the customer, one `catchTag` per error group.
 *
 *   pnpm example error-handling
 *
 * Every failure of `getQuote` is a tagged error. Card outcomes carry the service's userMessage,
 * meant for the customer; retrying gives the same answer. A merchant outcome is transient: the
 * customer should try later. Service failures were already retried by the SDK within its budget; a
 * POST refused after them is resumed once, since its transaction may exist.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Errors, Money } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { QuoteEvents, QuoteJournal, QuotePoller } from "@gcx/poller"
import { Console, Effect, Layer, Option } from "effect"

const GcxLive = QuotePoller.layer().pipe(
  Layer.provide(Layer.merge(QuoteEvents.layer(), QuoteJournal.layerNoop)),
  Layer.provide(ExchangeClient.layerConfig()),
  Layer.provide(UndiciClient.layer)
)

/** The service's userMessage, or our own words when it sent none. */
const said = (error: { readonly userMessage?: string | undefined }, fallback: string) => error.userMessage ?? fallback

/**
 * The quote of one card. A POST refused after the SDK's retries, one attempt of which got no answer
 * (or a cut one, or a 500), may still have created the transaction: quoted again with its requestId
 * and attempts, the service answers that same transaction, never a second one
 * (`Errors.postResumption`; `None` when nothing can exist).
 */
const quoteCard = (cardNumber: string) =>
  Effect.flatMap(QuotePoller.QuotePoller, (poller) => {
    const card = { cardNumber, pinNumber: "1234", productLineId: "1000" }
    return poller.getQuote(card).pipe(
      Effect.catch((error) =>
        Option.match(Errors.postResumption(error), {
          onNone: () => Effect.fail(error),
          onSome: (resumption) => poller.getQuote(card, resumption)
        })
      )
    )
  })

/** What the customer sees for one card. */
const answerFor = (cardNumber: string) =>
  quoteCard(cardNumber).pipe(
    Effect.map((quote) => `We offer ${Money.format(quote.exchangeCardValue)} for this card.`),
    Effect.catchTags({
      // Card outcomes: show the service's message; do not retry.
      InvalidCard: (error) => Effect.succeed(said(error, "Check the card number and PIN.")),
      CardValueOutOfRange: (error) => Effect.succeed(said(error, "This card has no usable balance.")),
      CardNotAccepted: (error) => Effect.succeed(said(error, "This card cannot be accepted.")),
      OfferExpired: (error) => Effect.succeed(said(error, "The offer expired; please try again.")),
      // Merchant outcome: transient, with no known recovery time.
      MerchantUnavailable: (error) => Effect.succeed(`${said(error, "The merchant cannot be reached.")} (try later)`),
      // The quote did not finish in time: keep the transaction id and resume it with `track`.
      PollTimeout: (error) =>
        Effect.succeed(`Still checking (transaction ${error.transactionId}); we will let you know.`)
    }),
    // Everything else is ours to fix (configuration, service, network): log it, apologise.
    Effect.catch((error: Errors.QuoteFailure) =>
      Effect.logError(`quote failed: ${error._tag}`).pipe(
        Effect.as("Sorry, we cannot check cards right now.")
      )
    )
  )

const cards = [
  "6006000000000001", // success
  "6006000000000035", // exchange.invalid.card
  "6006000000000027", // exchange.card.value.out.of.range
  "6006000000000043", // exchange.card.not.accepted
  "6006000000000050" // exchange.card.merchant.unavailable
]

const program = Effect.forEach(cards, answerFor, { concurrency: "unbounded" }).pipe(
  Effect.flatMap((answers) =>
    Effect.forEach(cards, (cardNumber, i) => Console.log(`card ending ${cardNumber.slice(-4)}: ${answers[i]}`))
  )
)

program.pipe(Effect.provide(GcxLive), NodeRuntime.runMain)
