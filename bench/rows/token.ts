/**
 * Row 2, tokens: many concurrent calls on a cold token cache. gcx's token
 * provider shares one request in flight; the naive hand-written cache
 * ("use the token if there is one, else fetch one") fetches one per caller
 * that finds it empty. Counted in the sandbox's journal.
 */
import { ExchangeClient } from "@gcx/http"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { RawClient } from "../baseline/RawClient.js"
import * as Admin from "../internal/Admin.js"
import { clientLayer, rawOptions } from "../internal/gcx.js"
import type { RowContext, RowResult } from "../internal/report.js"
import { fmt, goal } from "../internal/report.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import { round } from "../internal/stats.js"

/** Runs row 2. */
export const run = (context: RowContext): Effect.Effect<RowResult, Error> =>
  Effect.gen(function*() {
    const started = performance.now()
    const requests = context.quick ? 100 : 1_000
    const sandbox = yield* SandboxProcess.scoped([{}])
    const { endpoint } = sandbox

    yield* Effect.promise(() => Admin.reset(endpoint))
    const gcxStarted = performance.now()
    const gcxFailures = yield* Effect.gen(function*() {
      const client = yield* ExchangeClient.ExchangeClient
      const outcomes = yield* Effect.all(Array.from({ length: requests }, () => Effect.result(client.heartbeat)), {
        concurrency: "unbounded"
      })
      return outcomes.filter(Result.isFailure).length
    }).pipe(
      // a burst of 1,000 waits on the sandbox: give every call time to be answered
      Effect.provide(clientLayer(endpoint, { requestTimeout: "60 seconds" }))
    )
    const gcxSeconds = (performance.now() - gcxStarted) / 1000
    const gcxJournal = yield* Effect.promise(() => Admin.journal(endpoint))
    context.log(`token: gcx made ${gcxJournal.requests.token} token requests for ${requests} calls`)

    yield* Effect.promise(() => Admin.reset(endpoint))
    const rawStarted = performance.now()
    const rawFailures = yield* Effect.promise(async () => {
      const client = new RawClient(rawOptions(endpoint, 0))
      const outcomes = await Promise.allSettled(Array.from({ length: requests }, () => client.heartbeat()))
      return outcomes.filter((outcome) => outcome.status === "rejected").length
    })
    const rawSeconds = (performance.now() - rawStarted) / 1000
    const rawJournal = yield* Effect.promise(() => Admin.journal(endpoint))
    context.log(`token: the naive client made ${rawJournal.requests.token} token requests for ${requests} calls`)

    const gcxTokens = gcxJournal.requests.token
    const rawTokens = rawJournal.requests.token
    return {
      number: 2,
      id: "token",
      title: "Token",
      baseline: "naive client: check-then-fetch token cache, no single flight",
      params: { concurrentRequests: requests, call: "heartbeat", cache: "cold", gcxRequestTimeout: "60 s" },
      figures: {
        gcx: {
          tokenRequests: gcxTokens,
          heartbeats: gcxJournal.requests.heartbeat,
          failures: gcxFailures,
          seconds: round(gcxSeconds, 2)
        },
        raw: {
          tokenRequests: rawTokens,
          heartbeats: rawJournal.requests.heartbeat,
          failures: rawFailures,
          seconds: round(rawSeconds, 2)
        },
        ratio: round(gcxTokens / rawTokens, 4)
      },
      lines: [
        {
          measure: `token requests for ${fmt(requests)} concurrent calls, cold cache`,
          gcx: fmt(gcxTokens),
          baseline: fmt(rawTokens),
          ratio: fmt(gcxTokens / rawTokens, 3),
          goal: "token.requests"
        },
        {
          measure: "seconds for the burst (token included)",
          gcx: fmt(gcxSeconds, 2),
          baseline: fmt(rawSeconds, 2),
          ratio: fmt(gcxSeconds / rawSeconds, 2)
        }
      ],
      goals: [goal("token.requests", "token requests made by gcx", "==", 1, gcxTokens)],
      notes: [],
      seconds: round((performance.now() - started) / 1000, 1)
    }
  }).pipe(Effect.scoped)
