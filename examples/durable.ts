/**
 * durable: quotes that outlive their process, embedded on SQLite (no server to run).
 *
 *   GCX_DATA_KEY=$(openssl rand -base64 32) pnpm example durable
 *
 * Each quote is a workflow (`effect/workflow`) run by the cluster's single runner over a SQLite
 * file. A first "process" submits three quotes and stops at once, with them in flight; a second
 * one, built from scratch over the same file, resumes them and awaits their outcomes. The card
 * number and PIN are stored sealed with AES-256-GCM under `GCX_DATA_KEY` (32 bytes in base64).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Money } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import * as UndiciClient from "@gcx/http/UndiciClient"
import { CardCipher, DurableQuotes, Embedded } from "@gcx/workflow"
import { Console, Effect, Layer, Result } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** Durable quotes in the SQLite file `filename`. Each call builds a fresh runner, as a new process would. */
const durableLive = (filename: string) =>
  Embedded.layerQuotes({ filename }).pipe(
    Layer.provide(CardCipher.layerConfig()),
    Layer.provide(ExchangeClient.layerConfig()),
    Layer.provide(UndiciClient.layer)
  )

const cards = [
  { cardNumber: "6006000000000001", pinNumber: "1234", productLineId: "1000" },
  { cardNumber: "6006000000000019", pinNumber: "1234", productLineId: "1000" },
  { cardNumber: "6006000000000035", pinNumber: "1234", productLineId: "1000" }
]

// The first process: record three quotes durably, then stop with them in flight.
const submitThenStop = Effect.gen(function*() {
  const quotes = yield* DurableQuotes.DurableQuotes
  const requestIds = yield* Effect.forEach(cards, (card) => quotes.submit(card))
  yield* Console.log(`first process: submitted ${requestIds.length} quotes, stopping`)
  return requestIds
})

// The second process: the same file; the runner resumes the quotes, and `result` awaits each one.
const resumeAndAwait = (requestIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const quotes = yield* DurableQuotes.DurableQuotes
    for (const requestId of requestIds) {
      const outcome = yield* Effect.result(quotes.result(requestId))
      yield* Console.log(
        Result.match(outcome, {
          onSuccess: (quote) =>
            `${requestId}: balance ${Money.format(quote.actualCardValue)}, offered ${
              Money.format(quote.exchangeCardValue)
            }`,
          onFailure: (error) => `${requestId}: ${error._tag}`
        })
      )
    }
  })

const program = Effect.gen(function*() {
  const directory = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "gcx-durable-"))),
    (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
  )
  const filename = join(directory, "gcx.db")
  const requestIds = yield* Effect.provide(submitThenStop, durableLive(filename))
  yield* Effect.provide(resumeAndAwait(requestIds), durableLive(filename))
})

program.pipe(Effect.scoped, NodeRuntime.runMain)
