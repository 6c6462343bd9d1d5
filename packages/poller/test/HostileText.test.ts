/**
 * Issue 20, item 2, over real HTTP: the service's text is not trusted whole.
 * - A service that echoes the card number into SVC-TRACE-ID, the Location,
 *   the step tags and every text of its Error body: no full card number in the
 *   events, the error, the logs, the spans or the OTLP export; the trace id is
 *   dropped and the client says so once, without its value.
 * - A 15,000-character trace id and a 900 KB ErrorCode: the trace id is
 *   dropped, every text is cut to 1,024 characters, and the export stays small.
 * - The token endpoint and the answers that are refused unread (a redirect)
 *   keep no such trace id or text either.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Errors } from "@gcx/core"
import { QuoteEvent, Routes } from "@gcx/core"
import { ExchangeClient } from "@gcx/http"
import * as Telemetry from "@gcx/http/Telemetry"
import { Capture } from "@gcx/sandbox"
import * as OtlpReceiver from "@gcx/sandbox/OtlpReceiver"
import { Effect, Exit, Stream } from "effect"
import { QuotePoller } from "../src/index.js"
import {
  card,
  clientLayer,
  completedQuote,
  type Handler,
  json,
  optionsFor,
  pendingQuote,
  pollerLayer,
  server,
  service,
  status,
  tokenAnswer,
  transactionId
} from "./hostile.js"

const cardNumber = card.cardNumber

/** The first GET answers pending with `steps`, every later one `failure`; every answer carries `traceId`. */
const quoteService = (
  traceId: string,
  options: {
    readonly location: string
    readonly steps: ReadonlyArray<unknown>
    readonly failure: readonly [status: number, body: unknown]
  }
): Handler => {
  let gets = 0
  const traced = (answer: Handler): Handler => (request, response) => {
    response.setHeader("svc-trace-id", traceId)
    answer(request, response)
  }
  return traced(service({
    createQuote: (_, response) => json(response, 201, pendingQuote, { location: options.location }),
    getTransaction: (_, response) =>
      gets++ === 0
        ? json(response, 200, { ...status(pendingQuote), steps: options.steps })
        : json(response, ...options.failure)
  }))
}

/** Runs one quote through the poller with logs and spans captured and telemetry exported to a receiver. */
const quoteThrough = (handler: Handler) =>
  Effect.gen(function*() {
    const hostile = yield* server(handler)
    const receiver = yield* OtlpReceiver.make()
    const capture = Capture.make()
    const exit = yield* Effect.flatMap(QuotePoller.QuotePoller, (poller) =>
      poller.quote(card).pipe(
        Stream.runCollect,
        Effect.exit
      )).pipe(
        Effect.provide(pollerLayer(optionsFor(hostile.url), undefined, {
          schedule: { initialDelay: "5 millis", jitter: 0 }
        })),
        Effect.provide(Capture.layer(capture)),
        // outermost: closing it flushes the export
        Effect.provide(Telemetry.layer({ endpoint: receiver.url, metricExportInterval: "1 hour" }))
      )
    const events = Exit.isSuccess(exit) ? exit.value : []
    return { capture, events, exported: JSON.stringify(receiver.bodies), spans: receiver.spans() }
  }).pipe(Effect.scoped)

const failureOf = (events: ReadonlyArray<QuoteEvent.QuoteEvent>): Errors.QuoteFailure => {
  const last = events.at(-1)
  if (last?._tag !== "Failed") throw new Error(`the quote did not fail: ${last?._tag}`)
  return last.error
}

const droppedWarnings = (capture: Capture.Capture) =>
  capture.lines.filter((line) => line.includes("SVC-TRACE-ID") && line.includes("dropped"))

/** Every string in a value, however deep. */
const strings = (value: unknown): Array<string> =>
  typeof value === "string"
    ? [value]
    : typeof value === "object" && value !== null
    ? Object.values(value).flatMap(strings)
    : []

describe("the service's text is not trusted whole", () => {
  it.live("a service echoing the card number everywhere: none in events, error, logs, spans or export", () =>
    Effect.gen(function*() {
      const echoed = `exchange.odd.${cardNumber}`
      const { capture, events, exported, spans } = yield* quoteThrough(quoteService(cardNumber, {
        location: `${Routes.transactionPath(transactionId)}?card=${cardNumber}&${"q".repeat(2_000)}`,
        steps: [{ descriptionTag: `exchange.vault ${cardNumber}`, isCompleted: true }],
        failure: [400, {
          ErrorCode: echoed,
          Message: `card ${cardNumber} is odd`,
          UserMessage: `Your card ${cardNumber} is odd`,
          MoreInfoUrl: `https://example.test/${cardNumber}`
        }]
      }))
      expect(events.map((event) => event._tag)).toEqual(["Submitted", "Progress", "StepCompleted", "Failed"])
      const [submitted] = events
      expect(submitted).toMatchObject({ _tag: "Submitted", location: expect.stringContaining("****0001") })
      expect(submitted).not.toHaveProperty("traceId")
      expect(submitted?._tag === "Submitted" && submitted.location?.length).toBeLessThanOrEqual(1024)
      const error = failureOf(events)
      expect(error).toMatchObject({
        _tag: "UnknownServiceError",
        errorCode: "exchange.odd.****0001",
        message: "card ****0001 is odd",
        userMessage: "Your card ****0001 is odd",
        moreInfoUrl: "https://example.test/****0001"
      })
      expect(error).not.toHaveProperty("traceId")
      expect(events[2]).toMatchObject({ descriptionTag: "exchange.vault ****0001" })
      // the trace id is dropped on every answer, and said once by the client and once by its token
      // provider, with the reason and never the value
      const warnings = droppedWarnings(capture)
      expect(warnings).toHaveLength(2)
      expect(warnings.filter((line) => line.includes("the service sent"))).toHaveLength(1)
      expect(warnings.filter((line) => line.includes("the token endpoint sent"))).toHaveLength(1)
      for (const warning of warnings) expect(warning).toContain("digits")
      // the run was captured and exported: spans with their attributes, the failure's among them
      expect(spans.some((span) => span.attributes.errorCode === "exchange.odd.****0001")).toBe(true)
      const text = [
        Capture.text(capture),
        ...events.flatMap((event) => [JSON.stringify(QuoteEvent.encode(event)), String(event)]),
        exported
      ].join("\n")
      expect(text).toContain("****0001")
      expect(Capture.scan(text, [cardNumber, cardNumber.slice(0, 12)])).toEqual([])
    }))

  it.live("a 15,000-character trace id and a 900 KB ErrorCode: dropped, and every text cut to 1,024", () =>
    Effect.gen(function*() {
      const long = (size: number) => `${cardNumber}${"x".repeat(size)}`
      const { capture, events, exported, spans } = yield* quoteThrough(quoteService("t".repeat(15_000), {
        location: Routes.transactionPath(transactionId),
        steps: [{ descriptionTag: long(20_000), isCompleted: true }],
        failure: [422, {
          ErrorCode: long(900_000),
          Message: long(20_000),
          UserMessage: long(20_000),
          MoreInfoUrl: long(20_000)
        }]
      }))
      expect(events.map((event) => event._tag)).toEqual(["Submitted", "Progress", "StepCompleted", "Failed"])
      expect(events[0]).not.toHaveProperty("traceId")
      const error = failureOf(events)
      expect(error).not.toHaveProperty("traceId")
      expect(error.message).toMatch(/… \(cut from 20,016 characters\)$/)
      expect("errorCode" in error && error.errorCode).toMatch(/^\*\*\*\*0001x+… \(cut from 900,016 characters\)$/)
      // no text of the service over 1,024 characters anywhere: events, span attributes, log lines
      const texts = [
        ...events.flatMap((event) => strings(QuoteEvent.encode(event))),
        ...spans.flatMap((span) => strings(span.attributes))
      ]
      expect(texts.filter((text) => text.length > 1024).map((text) => text.slice(0, 40))).toEqual([])
      expect(capture.lines.filter((line) => line.length > 8 * 1024).map((line) => line.slice(0, 80))).toEqual([])
      const warnings = droppedWarnings(capture)
      expect(warnings).toHaveLength(2)
      for (const warning of warnings) {
        expect(warning).toContain("length")
        expect(warning).not.toContain("tttttttt")
      }
      // the whole OTLP export of the quote (spans and metrics) stays small
      expect(exported.length).toBeLessThan(64 * 1024)
      expect(Capture.scan(exported, [cardNumber])).toEqual([])
    }))

  it.live("the token endpoint and an unread redirect keep no echoed trace id or text", () =>
    Effect.gen(function*() {
      const traced = (status: number, body: unknown, headers: Record<string, string> = {}): Handler => (_, response) =>
        json(response, status, body, { "svc-trace-id": cardNumber, ...headers })
      const refusing = yield* server(service({
        token: traced(400, {
          error: `invalid_client_${cardNumber}${"e".repeat(5_000)}`,
          error_description: `client ${cardNumber} unknown`
        })
      }))
      const redirecting = yield* server(service({
        token: traced(200, JSON.parse(tokenAnswer())),
        getTransaction: traced(302, {}, { location: `http://127.0.0.1:1/${cardNumber}` })
      }))
      const capture = Capture.make()
      const [tokenError, redirect] = yield* Effect.all([
        Effect.flatMap(ExchangeClient.ExchangeClient, (client) => client.heartbeat).pipe(
          Effect.flip,
          Effect.provide(clientLayer(optionsFor(refusing.url)))
        ),
        Effect.flatMap(ExchangeClient.ExchangeClient, (client) => client.getTransaction(transactionId)).pipe(
          Effect.flip,
          Effect.provide(clientLayer(optionsFor(redirecting.url)))
        )
      ]).pipe(Effect.provide(Capture.layer(capture)))
      expect(tokenError).toMatchObject({ _tag: "TokenError", httpStatus: 400 })
      expect(tokenError).not.toHaveProperty("traceId")
      expect(tokenError.message).toContain("client ****0001 unknown")
      expect("oauthError" in tokenError && tokenError.oauthError).toMatch(/^invalid_client_\*\*\*\*0001e+… \(cut/)
      expect("oauthError" in tokenError && tokenError.oauthError?.length).toBeLessThanOrEqual(1024)
      expect(tokenError.message.length).toBeLessThanOrEqual(2 * 1024)
      expect(redirect).toMatchObject({ _tag: "UnexpectedResponse", reason: "Redirect", httpStatus: 302 })
      expect(redirect).not.toHaveProperty("traceId")
      expect(redirect.message).toContain("****0001")
      // each token provider and each client says once that it dropped a trace id
      expect(droppedWarnings(capture)).toHaveLength(3)
      const text = [Capture.text(capture), ...[tokenError, redirect].flatMap((error) => Capture.show(error))].join("\n")
      expect(Capture.scan(text, [cardNumber, cardNumber.slice(0, 12)])).toEqual([])
    }).pipe(Effect.scoped))
})

describe("a transaction id is the service's, not card data", () => {
  it.live("an id with 8 digits in a row keeps its Location whole, and the quote completes at that id", () =>
    Effect.gen(function*() {
      // drawn by the sandbox once (26 base-32 characters); `Redaction.serviceText` used to mask it to `GGS****6456`
      const digits = "W8HWCYSA0GGS28906456P0B9KP"
      const quote = (response: Record<string, unknown>) => ({ ...response, transactionId: digits })
      const { events } = yield* quoteThrough(service({
        createQuote: (_, response) =>
          json(response, 201, quote(pendingQuote), {
            location: `${Routes.transactionPath(digits)}?card=${cardNumber}`
          }),
        getTransaction: (request, response) =>
          request.url.endsWith(`/${digits}`)
            ? json(response, 200, { ...status(quote(completedQuote)), entityid: digits })
            : json(response, 404, { ErrorCode: "exchange.transaction.not.found" })
      }))
      expect(events.map((event) => event._tag)).toEqual(["Submitted", "Progress", "Completed"])
      expect(events[0]).toMatchObject({
        _tag: "Submitted",
        transactionId: digits,
        location: `${Routes.transactionPath(digits)}?card=****0001`
      })
      expect(events.at(-1)).toMatchObject({ _tag: "Completed", transactionId: digits })
    }))
})
