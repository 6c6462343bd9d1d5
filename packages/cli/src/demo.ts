/**
 * `pnpm demo`: the whole quote flow against the embedded sandbox, with no
 * credentials needed: one quote with its live progress, one card of each
 * scenario with its outcome and user message, then a small batch and its
 * resume. It runs the sandbox at time scale 0.5 (`GCX_SANDBOX_TIME_SCALE`
 * overrides it), so that it ends in well under a minute, and exits 0 when
 * every scenario ended as the sandbox documents it.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Errors from "@gcx/core/Errors"
import * as Redaction from "@gcx/core/Redaction"
import * as QuotePoller from "@gcx/poller/QuotePoller"
import * as TestData from "@gcx/sandbox/TestData"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Connection from "./Connection.js"
import * as Embedded from "./Embedded.js"
import * as ExitCode from "./ExitCode.js"
import * as Render from "./Render.js"
import * as Batch from "./run/Batch.js"
import * as Quote from "./run/Quote.js"

/** The demo's time scale unless `GCX_SANDBOX_TIME_SCALE` is set: the slow card takes 15 s instead of 30. */
const defaultTimeScale = 0.5

const { pin } = TestData
const product = TestData.defaultProductLineId

/** One card of each scenario, and the outcome the sandbox documents for it. */
const scenarios: ReadonlyArray<{
  readonly name: string
  readonly cardNumber: string
  readonly pin?: string
  readonly expected: "Completed" | Errors.QuoteFailure["_tag"]
}> = [
  { name: "instant", cardNumber: TestData.Cards.instant, expected: "Completed" },
  { name: "any other card", cardNumber: "6006000000001234", expected: "Completed" },
  { name: "zero balance", cardNumber: TestData.Cards.zeroBalance, expected: "CardValueOutOfRange" },
  { name: "invalid card", cardNumber: TestData.Cards.invalid, expected: "InvalidCard" },
  {
    name: `PIN ${TestData.rejectedPin}`,
    cardNumber: TestData.Cards.success,
    pin: TestData.rejectedPin,
    expected: "InvalidCard"
  },
  { name: "not accepted", cardNumber: TestData.Cards.notAccepted, expected: "CardNotAccepted" },
  { name: "merchant unavailable", cardNumber: TestData.Cards.merchantUnavailable, expected: "MerchantUnavailable" },
  { name: "slow", cardNumber: TestData.Cards.slow, expected: "Completed" }
]

/** The cards of the demo batch: four that complete, one refused, one whose merchant is unavailable. */
const batchFile = [
  "cardNumber,pinNumber,productLineId",
  `${TestData.Cards.success},${pin},1000`,
  `${TestData.Cards.instant},${pin},2000`,
  `6006000000000100,${pin},3000`,
  `6006000000000118,${pin},4000`,
  `${TestData.Cards.invalid},${pin},1000`,
  `${TestData.Cards.merchantUnavailable},${pin},1000`
].join("\n")

const heading = (text: string) => Console.log(`\n${text}\n${"─".repeat(text.length)}`)

const seconds = (duration: Duration.Duration) => `${(Duration.toMillis(duration) / 1000).toFixed(1)} s`

/** Quotes every scenario card at once and prints each outcome as it arrives; fails if one is not as documented. */
const scenarioTour = Effect.gen(function*() {
  const poller = yield* QuotePoller.QuotePoller
  const width = Math.max(...scenarios.map((scenario) => scenario.name.length))
  yield* Console.log(
    `Quoting ${scenarios.length} cards; each line appears as its quote ends (the slow card comes last).`
  )
  const outcomes = yield* Effect.forEach(
    scenarios,
    (scenario) =>
      poller.getQuote({ cardNumber: scenario.cardNumber, pinNumber: scenario.pin ?? pin, productLineId: product }).pipe(
        Effect.result,
        Effect.timed,
        Effect.tap(([elapsed, outcome]) => {
          const label = `${Redaction.maskCardNumber(scenario.cardNumber)}  ${scenario.name.padEnd(width)}  `
          return Console.log(Result.match(outcome, {
            onSuccess: (quote) =>
              `  ✔ ${label}completed in ${seconds(elapsed)}: actual ${Render.money(quote.actualCardValue)}, exchange ${
                Render.money(quote.exchangeCardValue)
              }`,
            onFailure: (error) =>
              `  ✗ ${label}${Render.errorTag(error)} (exit code ${ExitCode.ofQuoteFailure(error)})${
                Option.match(Errors.customerMessage(error), {
                  onNone: () => "",
                  onSome: (message) => `, tell the customer: "${message}"`
                })
              }`
          }))
        }),
        Effect.map(([, outcome]) => ({
          scenario,
          got: Result.match(outcome, { onFailure: (e) => e._tag, onSuccess: () => "Completed" })
        }))
      ),
    { concurrency: "unbounded" }
  )
  const wrong = outcomes.filter(({ got, scenario }) => got !== scenario.expected)
  if (wrong.length > 0) {
    return yield* new ExitCode.CliError({
      code: ExitCode.ExitCode.Unexpected,
      message: `demo: ${
        wrong.map(({ got, scenario }) => `${scenario.name} ended with ${got}, not ${scenario.expected}`).join("; ")
      }`
    })
  }
})

/** The demo itself, over a poller for the embedded sandbox. */
const demo = Effect.gen(function*() {
  yield* Console.log("gcx demo: the whole quote flow against a sandbox running in this process")

  yield* heading("1. One quote, with live progress")
  yield* Console.log(`$ pnpm gcx quote --card <the success card> --pin <any PIN> --product ${product}`)
  yield* Quote.run(
    { cardNumber: TestData.Cards.success, pinNumber: pin, productLineId: product },
    { json: false, pollInterval: Option.some(100), deadline: 60 }
  )

  yield* heading("2. One card of each scenario, quoted at the same time")
  yield* scenarioTour

  yield* heading("3. A small batch, then the same batch again")
  const fs = yield* FileSystem.FileSystem
  const directory = yield* fs.makeTempDirectoryScoped({ prefix: "gcx-demo-" })
  const file = `${directory}/cards.csv`
  const out = `${directory}/results.jsonl`
  yield* fs.writeFileString(file, `${batchFile}\n`)
  const input: Batch.Input = {
    file,
    out: Option.some(out),
    concurrency: 3,
    json: false,
    pollInterval: Option.none(),
    deadline: 60
  }
  yield* Console.log("$ pnpm gcx batch cards.csv --concurrency 3 --out results.jsonl")
  yield* Batch.run(input)
  yield* Console.log("\nThe same command again: finished cards are skipped, the merchant outcome is retried.")
  yield* Batch.run(input)
})

const program = Effect.gen(function*() {
  const timeScale = yield* Config.Number("GCX_SANDBOX_TIME_SCALE").pipe(Config.withDefault(defaultTimeScale))
  const client = Embedded.layer({ timeScale, announce: "pnpm demo" }).pipe(Layer.provide(Connection.httpClient))
  const [elapsed] = yield* Effect.timed(Effect.scoped(demo).pipe(Effect.provide(Connection.withPoller(client))))
  yield* Console.log(`\nDemo finished in ${seconds(elapsed)}.`)
  yield* Console.log("Next: pnpm gcx --help, pnpm example --all, pnpm gcx sandbox (it lists the test cards)")
})

ExitCode.report(program).pipe(
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown: ExitCode.teardown })
)
