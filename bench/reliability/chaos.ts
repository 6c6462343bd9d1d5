/**
 * The chaos run's figures (`Chaos.test.ts`): what the client saw of each quote,
 * what the sandbox created and journaled, and the counts the tests assert and
 * print (outcomes, lost and duplicate transactions, injected faults, token
 * requests against their bounds).
 */
import { Errors, QuoteEvent } from "@gcx/core"
import { TokenProvider } from "@gcx/http"
import type { Faults, Journal, Lifecycle } from "@gcx/sandbox"
import { TestData } from "@gcx/sandbox"
import type * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Option } from "effect"
import { randomBytes, randomInt } from "node:crypto"
import type * as Capture from "./capture.js"

/**
 * The faults. The first rule of an answer kind that fires decides the answer,
 * so each later rule's probability is raised to give the intended share of
 * all requests: 20 % 503, 5 % 500, 5 % resets, 3 % of POSTs dropped after
 * processing; 2 % of requests stall 2 s (on top of their answer).
 */
export const faults: ReadonlyArray<Faults.FaultRule> = [
  { route: "any", kind: "status503", probability: 0.2 },
  { route: "any", kind: "status500", probability: 0.05 / 0.8 },
  { route: "any", kind: "reset", probability: 0.05 / 0.75 },
  { route: "createQuote", kind: "dropAnswer", probability: 0.03 / 0.7 },
  { route: "any", kind: "stall", probability: 0.02 }
]

/** The client's settings for the run (reported with the figures). */
export const clientSettings = {
  requestTimeout: "5 seconds",
  retry: {
    maxAttempts: 10,
    baseDelay: "50 millis",
    maxDelay: "1 second",
    budget: { capacity: 5_000, refillPerSecond: 500 }
  }
} as const

/** `count` cards: mostly distinct cards with derived balances (2 s), plus card outcomes and instant quotes. */
export const cards = (count: number) =>
  Array.from({ length: count }, (_, index) => ({
    cardNumber: index % 20 === 0
      ? TestData.Cards.invalid
      : index % 20 === 1
      ? TestData.Cards.merchantUnavailable
      : index % 20 === 2
      ? TestData.Cards.instant
      : `4929${String(randomInt(0, 1e12)).padStart(12, "0")}`,
    pinNumber: `pin-${randomBytes(5).toString("hex")}`,
    productLineId: TestData.defaultProductLineId
  }))

/** What the client saw of one quote, over its first POST and the resumes of it (`resumeOf`). */
export interface Seen {
  readonly events: Array<QuoteEvent.QuoteEvent>
  readonly rejections: Array<Errors.QuoteFailure>
  /** How many times a refused POST of the quote was resumed: each refusal but the last one was. */
  resumes: number
}

/** Nothing seen of a quote yet. */
export const unseen = (): Seen => ({ events: [], rejections: [], resumes: 0 })

/**
 * How to resume a POST refused with `error`, after `resumes` resumes of it,
 * as the docs say (`Errors.postResumption`): only a POST that failed at the
 * attempts cap, the one way a working client gives up on a transaction that
 * may exist. One that gave up sooner (its retry budget ran dry, or a fault
 * of the retry policy) is not resumed: its transaction counts as lost.
 */
export const resumeOf = (error: Errors.QuoteFailure, resumes: number): Errors.PostResumption | undefined =>
  Option.getOrUndefined(Option.filter(
    Errors.postResumption(error),
    (resume) => resume.previousAttempts === clientSettings.retry.maxAttempts * (resumes + 1)
  ))

/** What the run left: the client's view, the bus, the server's view and the capture. */
export interface Run {
  readonly seconds: number
  readonly seen: ReadonlyArray<Seen>
  readonly busEvents: number
  readonly journalLeft: number
  readonly transactions: ReadonlyArray<Lifecycle.Summary>
  readonly journal: Journal.Journal
  readonly capture: Capture.Capture
  /** Everything the telemetry exported: the OTLP bodies the receiver got, and a Prometheus scrape. */
  readonly exported: string
  /** The metric series the receiver got last. */
  readonly metrics: ReadonlyArray<OtlpReceiver.Point>
}

/** The run's settings, reported with the figures. */
export interface Settings {
  readonly quotes: number
  readonly concurrency: number
  /** The partner of the run: only its transactions are counted. */
  readonly clientId: string
  readonly tokenLifetimeSeconds: number
  /** The client's settings (request timeout, retries). */
  readonly client: unknown
}

/** The figures of a run. */
export const figures = (run: Run, settings: Settings) => {
  const { clientId, concurrency, quotes, tokenLifetimeSeconds } = settings
  const accepted = run.seen.filter((quote) => quote.events.some((event) => event._tag === "Submitted"))
  const terminalCounts = run.seen.map((quote) => quote.events.filter(QuoteEvent.isTerminal).length)
  const outcomes: Record<string, number> = {}
  for (const quote of run.seen) {
    const terminal = quote.events.find(QuoteEvent.isTerminal)
    const key = terminal?._tag === "Completed"
      ? "Completed"
      : terminal?._tag === "Failed"
      ? `Failed ${terminal.error._tag}`
      : quote.rejections.length > 0
      ? `POST refused: ${quote.rejections.at(-1)!._tag}`
      : "no outcome"
    outcomes[key] = (outcomes[key] ?? 0) + 1
  }
  const known = new Set(
    run.seen.flatMap((quote) => quote.events.filter((event) => event._tag === "Submitted")).map((event) =>
      event.transactionId
    )
  )
  const ours = run.transactions.filter((transaction) => transaction.clientId === clientId)
  const lost = ours.filter((transaction) => !known.has(transaction.transactionId))
  const duplicates = Object.entries(run.journal.transactionsByRequestId).filter(([, ids]) => ids.length > 1)
  const perRequestId = new Map<string, number>()
  for (const transaction of ours) {
    perRequestId.set(transaction.requestId, (perRequestId.get(transaction.requestId) ?? 0) + 1)
  }
  const entries = run.journal.entries
  const totalRequests = Object.values(run.journal.requests).reduce((sum, count) => sum + count, 0)
  // what each request got: the first answer kind that fired decides the answer; a stall delays it on top
  const injected: Record<string, number> = {}
  for (const entry of entries) {
    const fired = entry.faults ?? []
    const decided = fired.find((kind) => kind !== "stall" && kind !== "latency")
    for (const kind of [decided, fired.includes("stall") ? "stall" : undefined]) {
      if (kind !== undefined) injected[`${entry.route}:${kind}`] = (injected[`${entry.route}:${kind}`] ?? 0) + 1
    }
  }
  const tokenEntries = entries.filter((entry) => entry.route === "token")
  const failedTokenRequests = tokenEntries.filter((entry) => entry.status !== 200).length
  const windows = Math.ceil(run.seconds / tokenLifetimeSeconds)
  const refreshIntervalSeconds = tokenLifetimeSeconds - TokenProvider.refreshMargin(tokenLifetimeSeconds * 1000) / 1000
  const refreshIntervals = Math.ceil(run.seconds / refreshIntervalSeconds)
  return {
    quotes,
    concurrency,
    seconds: Math.round(run.seconds * 10) / 10,
    client: settings.client,
    accepted: accepted.length,
    outcomes,
    /** POSTs refused past their attempts, then resumed with their requestId (`resumeOf`). */
    resumedPosts: run.seen.reduce((sum, quote) => sum + quote.resumes, 0),
    terminalEventsPerQuote: {
      zero: terminalCounts.filter((count) => count === 0).length,
      one: terminalCounts.filter((count) => count === 1).length,
      more: terminalCounts.filter((count) => count > 1).length
    },
    busEvents: run.busEvents,
    streamEvents: run.seen.reduce((sum, quote) => sum + quote.events.length, 0),
    journalEntriesLeft: run.journalLeft,
    serverTransactions: ours.length,
    knownToClient: ours.length - lost.length,
    lost: lost.map((transaction) => ({
      transactionId: transaction.transactionId,
      requestId: transaction.requestId,
      /** How the client's POST ended. */
      refusal: run.seen.flatMap((quote) => quote.rejections).find((error) =>
        "requestId" in error && error.requestId === transaction.requestId
      )?._tag,
      /** Every POST of that requestId, as the sandbox journaled it. */
      attempts: entries.filter((entry) => entry.route === "createQuote" && entry.requestId === transaction.requestId)
        .map((entry) => `previousAttempts ${entry.previousAttempts}: ${entry.status ?? "reset"} ${entry.faults ?? []}`)
    })),
    duplicateRequestIds: duplicates.length + [...perRequestId.values()].filter((count) => count > 1).length,
    requests: run.journal.requests,
    postReplays:
      entries.filter((entry) =>
        entry.route === "createQuote" && entry.status === 201 && (entry.previousAttempts ?? 0) > 0
      ).length,
    unauthorized: entries.filter((entry) => entry.status === 401).length,
    journalComplete: entries.length === totalRequests,
    /** Requests per route and fault that decided their answer (and stalls). */
    faultsInjected: injected,
    /** The same as a share of each route's requests, in %. */
    faultRates: Object.fromEntries(
      Object.entries(injected).map(([key, count]) => {
        const route = key.split(":")[0] as keyof Journal.Journal["requests"]
        return [key, Math.round((1000 * count) / run.journal.requests[route]) / 10]
      })
    ),
    tokens: {
      lifetimeSeconds: tokenLifetimeSeconds,
      requests: run.journal.requests.token,
      failed: failedTokenRequests,
      distinctSentByClient: run.capture.tokens.size,
      expiryWindows: windows,
      /** The bound: one per expiry window, plus the failed requests that were retried. */
      onePerExpiryWindowPlusRetries: windows + failedTokenRequests,
      /** The token provider refreshes once `refreshMargin` is left: one per refresh interval. */
      refreshIntervalSeconds,
      onePerRefreshIntervalPlusRetries: refreshIntervals + failedTokenRequests + 1
    }
  }
}
