/**
 * Chaos through `gcx serve`: quotes submitted over HTTP to the gateway
 * (embedded: SQLite in a file, in this process, `internal/gatewayDeployment.ts`),
 * whose engine quotes against a sandbox process injecting the chaos run's
 * faults (`Chaos.faults`: 503s, 500s, resets, dropped POST answers, stalls),
 * with one restart of the whole gateway mid-run: its scope closed (server,
 * engine, database) once 40 % of the quotes were accepted, then built again
 * on the same database file, port and data key.
 *
 * The callers are plain `fetch` clients (`internal/gatewayHttp.ts`): every
 * quote's POST first (the restart comes while they are in flight), retried
 * with the same `Idempotency-Key` on connection errors, 5xx and 429; then
 * each quote's `GET /v1/quotes/{id}`, every second, to a terminal status. The key has
 * one webhook endpoint: a receiver on loopback (`webhookReceiver.ts`) that
 * verifies each signature, acts once per `Gcx-Event-Id`, and refuses the
 * first delivery of one event in ten with a 503 (deliveries retried from 1 s
 * here, instead of 10 s, to keep the run short).
 *
 * Asserted: 0 lost (every quote accepted and ended, as GET shows it; every
 * sandbox transaction is one of the callers' quotes), 0 duplicate
 * transactions per requestId, and every terminal outcome acted on exactly
 * once per event id by a verified delivery, none missing, none unknown; no
 * PIN or card number in any answer or webhook.
 *
 * Size: 1,000 quotes; 200 when CI=true.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { TestData } from "@gcx/sandbox"
import * as CardCipher from "@gcx/workflow/CardCipher"
import { Effect } from "effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as PgTest from "../../packages/workflow/test/utils/postgres.js"
import * as Admin from "../internal/Admin.js"
import * as GatewayDeployment from "../internal/gatewayDeployment.js"
import * as GatewayHttp from "../internal/gatewayHttp.js"
import { pool } from "../internal/pool.js"
import * as SandboxProcess from "../internal/SandboxProcess.js"
import * as Capture from "./capture.js"
import * as Chaos from "./chaos.js"
import * as WebhookReceiver from "./webhookReceiver.js"

const quotes = process.env.CI === "true" ? 200 : 1_000
const concurrency = 100
const restartAt = Math.round(quotes * 0.4)
/** Every loop ends by then. */
const runDeadline = () => Date.now() + 8 * 60_000

const partner: TestData.Partner = {
  clientId: "gateway-chaos-partner",
  clientSecret: `secret-${randomBytes(8).toString("hex")}`,
  apiKey: `api-key-${randomBytes(8).toString("hex")}`,
  creatorId: 7002
}

const cards = Chaos.cards(quotes)

/** One event in ten has its first delivery refused (a stable choice by event id). */
const refuseFirst = (eventId: string) => createHash("sha256").update(eventId).digest()[0]! % 10 === 0

/** What a caller saw of one quote. */
interface Seen {
  readonly idempotencyKey: string
  /** POST's last status (202: accepted) and its attempts. */
  post: GatewayHttp.Retried<{ readonly id: string }> | undefined
  /** The quote's last view, once it left `pending` (or the last status of a failed GET). */
  view: { readonly id: string; readonly status: string; readonly outcome?: { readonly transactionId: string } }
  getAttempts: number
  readonly getStatuses: Record<string, number>
  /** The status of the last GET that did not answer 200 (0: no answer). */
  lastError?: number
}

let sandbox: SandboxProcess.SandboxProcess | undefined
let receiver: WebhookReceiver.Receiver | undefined
let runtime: ManagedRuntime.ManagedRuntime<GatewayDeployment.Services, never> | undefined
let dir: string | undefined
let seen: ReadonlyArray<Seen> = []
let transactions: Awaited<ReturnType<typeof Admin.transactions>> = []
let journal: Awaited<ReturnType<typeof Admin.journal>> | undefined
/** The run's wall time, its POSTs', the restart's (closing, then closed to serving again) and the wait for the last webhooks. */
const timings = { seconds: 0, postSeconds: 0, closeSeconds: 0, restartSeconds: 0, webhookWaitSeconds: 0 }

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** The sum of per-status counts. */
const tally = (counts: ReadonlyArray<Readonly<Record<string, number>>>) => {
  const sum: Record<string, number> = {}
  for (const each of counts) {
    for (const [status, count] of Object.entries(each)) sum[status] = (sum[status] ?? 0) + count
  }
  return sum
}

/** The terminal views, by quote id. */
const ended = () => seen.filter((quote) => quote.view.status === "completed" || quote.view.status === "failed")

describe(`gateway chaos: ${quotes} quotes over HTTP under faults, one gateway restart`, () => {
  beforeAll(async () => {
    sandbox = await SandboxProcess.start([{ partners: [partner], seed: 11, faults: Chaos.faults }])
    receiver = await WebhookReceiver.start(refuseFirst)
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "gcx-gateway-chaos-"))
    const options: GatewayDeployment.Options = {
      endpoint: sandbox.endpoint,
      filename: path.join(dir, "gcx.db"),
      port: await Effect.runPromise(PgTest.freePort),
      dataKey: CardCipher.generateKey(),
      client: {
        clientId: partner.clientId,
        clientSecret: partner.clientSecret,
        apiKey: partner.apiKey,
        ...Chaos.clientSettings
      },
      webhooks: { baseDelay: "1 second", maxDelay: "5 seconds" },
      // the refused deliveries' warnings would fill the output; the figures are printed below
      logLevel: "Error"
    }
    const start = async () => {
      const built = ManagedRuntime.make(GatewayDeployment.layer(options))
      await built.runPromise(Effect.void)
      return built
    }
    runtime = await start()
    const caller = await runtime.runPromise(GatewayDeployment.createCaller("chaos", [receiver.url]))
    receiver.setSecret(caller.webhookSecrets[0]!)
    const target: GatewayHttp.Target = { baseUrl: GatewayDeployment.baseUrl(options.port), key: caller.key }

    const started = performance.now()
    const deadline = runDeadline()
    // each attempt within 10 s, as a backend's client would bound it
    const retry = { maxAttempts: 1_000, attemptTimeoutMillis: 10_000, baseDelayMillis: 100, deadline }
    let accepted = 0
    let restart: Promise<void> | undefined
    const restartOnce = () => {
      restart ??= (async () => {
        const at = performance.now()
        await runtime!.dispose()
        timings.closeSeconds = Math.round(performance.now() - at) / 1000
        runtime = await start()
        timings.restartSeconds = Math.round(performance.now() - at) / 1000
      })()
    }
    const quotesSeen: Array<Seen> = cards.map((_, index) => ({
      idempotencyKey: `chaos-${index}-${randomBytes(6).toString("hex")}`,
      post: undefined,
      view: { id: "", status: "not accepted" },
      getAttempts: 0,
      getStatuses: {}
    }))
    seen = quotesSeen
    // first every POST (the restart comes while they are in flight), then every quote polled to its end
    await pool(quotes, concurrency, async (index) => {
      const quote = quotesSeen[index]!
      quote.post = await GatewayHttp.retrying(
        (signal) => GatewayHttp.post(target, quote.idempotencyKey, cards[index]!, signal),
        retry
      )
      if (quote.post.status !== 202 || quote.post.body === undefined) return
      quote.view = { id: quote.post.body.id, status: "pending" }
      if (++accepted === restartAt) restartOnce()
    })
    timings.postSeconds = Math.round(performance.now() - started) / 1000
    await pool(quotes, concurrency, async (index) => {
      const quote = quotesSeen[index]!
      const id = quote.view.id
      while (quote.view.status === "pending" && Date.now() < deadline) {
        await pause(1_000)
        const view = await GatewayHttp.retrying<Seen["view"]>((signal) => GatewayHttp.get(target, id, signal), retry)
        quote.getAttempts += view.attempts
        for (const [status, count] of Object.entries(view.statuses)) {
          quote.getStatuses[status] = (quote.getStatuses[status] ?? 0) + count
        }
        if (view.status === 200 && view.body !== undefined) quote.view = view.body
        else quote.lastError = view.status
      }
    })
    await restart
    timings.seconds = Math.round(performance.now() - started) / 1000

    // the deliveries: every terminal outcome acted on, or the deadline
    const waitStarted = performance.now()
    while (receiver.acted.size < ended().length && Date.now() < deadline) await pause(250)
    // repeats that are still on their way
    await pause(2_000)
    timings.webhookWaitSeconds = Math.round(performance.now() - waitStarted) / 1000
    transactions = await Admin.transactions(sandbox.endpoint)
    journal = await Admin.journal(sandbox.endpoint)
    const outcomes: Record<string, number> = {}
    for (const quote of seen) outcomes[quote.view.status] = (outcomes[quote.view.status] ?? 0) + 1
    console.log(`gateway chaos figures:\n${
      JSON.stringify(
        {
          quotes,
          concurrency,
          restartAfterAccepted: restartAt,
          ...timings,
          outcomes,
          postAttempts: seen.reduce((sum, quote) => sum + (quote.post?.attempts ?? 0), 0),
          postsRetried: seen.filter((quote) => (quote.post?.attempts ?? 0) > 1).length,
          postStatuses: tally(seen.map((quote) => quote.post?.statuses ?? {})),
          getAttempts: seen.reduce((sum, quote) => sum + quote.getAttempts, 0),
          getStatuses: tally(seen.map((quote) => quote.getStatuses)),
          serverTransactions: transactions.filter((transaction) => transaction.clientId === partner.clientId).length,
          requests: journal.requests,
          webhooks: { ...receiver.counts, acted: receiver.acted.size }
        },
        null,
        2
      )
    }`)
  })

  afterAll(async () => {
    await runtime?.dispose()
    await receiver?.close()
    await sandbox?.stop()
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
  })

  it("0 lost: every quote accepted (202) and ended, as GET /v1/quotes/{id} shows it", () => {
    const notAccepted = seen.filter((quote) => quote.post?.status !== 202)
    expect(notAccepted.map((quote) => `${quote.idempotencyKey}: ${quote.post?.status}`)).toEqual([])
    const notEnded = seen.filter((quote) => !ended().includes(quote))
    expect(notEnded.map((quote) => `${quote.view.id}: ${quote.view.status} (last error ${quote.lastError})`)).toEqual(
      []
    )
    // the POSTs really were retried: the restart (and 5xx) made some callers try again
    expect(seen.some((quote) => (quote.post?.attempts ?? 0) > 1)).toBe(true)
  })

  it("0 lost on the service: every transaction the sandbox created is one of the callers' quotes", () => {
    const ids = new Set(seen.map((quote) => quote.view.id))
    const ours = transactions.filter((transaction) => transaction.clientId === partner.clientId)
    expect(ours.filter((transaction) => !ids.has(transaction.requestId)).map((t) => t.requestId)).toEqual([])
    // each completed quote shows the transaction the sandbox created for its id
    const byRequestId = new Map(ours.map((transaction) => [transaction.requestId, transaction.transactionId]))
    for (const quote of seen.filter((quote) => quote.view.status === "completed")) {
      expect(quote.view.outcome?.transactionId, quote.view.id).toBe(byRequestId.get(quote.view.id))
    }
  })

  it("0 duplicate transactions per requestId", () => {
    const ours = transactions.filter((transaction) => transaction.clientId === partner.clientId)
    expect(Object.values(journal!.transactionsByRequestId).filter((ids) => ids.length > 1)).toEqual([])
    expect(new Set(ours.map((transaction) => transaction.requestId)).size).toBe(ours.length)
  })

  it("every terminal outcome acted on exactly once per event id, by a verified delivery; none missing", () => {
    const { acted, counts } = receiver!
    const expected = new Map(ended().map((quote) => [`evt_${quote.view.id}`, quote.view]))
    expect([...expected.keys()].filter((eventId) => !acted.has(eventId))).toEqual([])
    expect([...acted.keys()].filter((eventId) => !expected.has(eventId))).toEqual([])
    for (const [eventId, event] of acted) {
      const view = expected.get(eventId)!
      expect(event.quoteId, eventId).toBe(view.id)
      expect(event.status, eventId).toBe(view.status)
      expect(event.type, eventId).toBe(`quote.${view.status}`)
    }
    expect(counts.badSignature).toBe(0)
    expect(counts.mismatchedEventId).toBe(0)
    // the refused first deliveries were retried: as many acted on as verified deliveries minus refusals and repeats
    expect(counts.refusedOnPurpose).toBeGreaterThan(0)
    expect(acted.size).toBe(counts.verified - counts.refusedOnPurpose - counts.duplicates)
  })

  it("no PIN or card number in any answer or webhook", () => {
    const text = [...receiver!.bodies, ...seen.map((quote) => JSON.stringify(quote))].join("\n")
    const sentinels = [...new Set(cards.map((card) => card.cardNumber)), ...cards.map((card) => card.pinNumber)]
    expect(Capture.scan(text, sentinels).map((sentinel) => `${sentinel.slice(0, 6)}…`)).toEqual([])
  })
})
