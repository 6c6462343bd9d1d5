import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Card, ErrorBody, Ids, Quote, Redaction, Routes } from "@gcx/core"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import {
  Authorization,
  BadRequest,
  Caller,
  Heartbeat,
  maxRequestIdLength,
  NotFound,
  SandboxApi,
  Unauthorized
} from "../Api.js"
import * as Journal from "../Journal.js"
import * as Lifecycle from "../Lifecycle.js"
import * as Scenarios from "../Scenarios.js"
import type { Transaction } from "../Store.js"
import { Store } from "../Store.js"
import type { Partner } from "../TestData.js"
import { Tokens } from "../Tokens.js"
import { readJson } from "./body.js"
import { SandboxConfig } from "./config.js"
import { safeEqual } from "./credentials.js"
import * as StatusBody from "./statusBody.js"

const badRequest = (ErrorCode: string, Message: string) => Effect.fail(new BadRequest({ ErrorCode, Message }))

const requestIdSyntax = new RegExp(`^[A-Za-z0-9_-]{1,${maxRequestIdLength}}$`)

const unauthorized = (Message: string) =>
  Effect.fail(new Unauthorized({ ErrorCode: ErrorBody.ErrorCodes.unauthorized, Message }))

const partnerNotFound = badRequest(ErrorBody.ErrorCodes.partnerNotFound, "The partner is not recognized")

const apiKeyHeader = Routes.Headers.apiKey
const requestIdHeader = Routes.Headers.requestId.toLowerCase()

/**
 * The bearer token, the partner, its x-api-key and the requestId header,
 * checked in that order. It runs on every exchange call, so the checks are
 * plain code between the two effects they need (the token's verification
 * against `Clock`, and whether the partner is enabled).
 */
export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const config = yield* SandboxConfig
    const tokens = yield* Tokens
    const store = yield* Store
    const partners = new Map(config.partners.map((partner) => [partner.clientId, partner]))
    /** The header checks, once the partner is known and enabled. */
    const checkHeaders = (partner: Partner) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, ({ headers }) => {
        if (!safeEqual(headers[apiKeyHeader] ?? "", partner.apiKey)) {
          return badRequest(ErrorBody.ErrorCodes.invalidApiKey, "The x-api-key header is invalid")
        }
        const requestId = headers[requestIdHeader]?.trim() ?? ""
        if (requestId === "") {
          return badRequest(ErrorBody.ErrorCodes.missingRequestId, "The requestId header is required")
        }
        if (!requestIdSyntax.test(requestId)) {
          return badRequest(
            ErrorBody.ErrorCodes.invalidParameter,
            `requestId must be 1 to ${maxRequestIdLength} characters of A-Z, a-z, 0-9, - and _`
          )
        }
        return Effect.succeed({ partner, requestId })
      })
    return Authorization.of({
      bearer: (token) => {
        const value = Redacted.value(token)
        if (value === "") return unauthorized("A bearer token is required")
        return Effect.matchEffect(tokens.verify(value), {
          onFailure: (error) => unauthorized(error.message),
          onSuccess: (claims) => {
            const partner = partners.get(claims.sub)
            if (partner === undefined) return partnerNotFound
            return Effect.flatMap(
              store.isEnabled(partner.clientId),
              (enabled) => enabled ? checkHeaders(partner) : partnerNotFound
            )
          }
        })
      }
    })
  })
)

/**
 * The card of a POST body. The reasons name the field and never echo its
 * value (`Card.validateEither`).
 */
const decodeCard = (body: unknown): Effect.Effect<Card.Card, BadRequest> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return badRequest(ErrorBody.ErrorCodes.invalidBody, "The request body must be a JSON object")
  }
  const card = (body as { readonly card?: unknown }).card
  if (typeof card !== "object" || card === null || Array.isArray(card)) {
    return badRequest(ErrorBody.ErrorCodes.invalidParameter, "card must be an object")
  }
  return Either.match(Card.validateEither(card), {
    onLeft: (error) => badRequest(ErrorBody.ErrorCodes.invalidParameter, error.message),
    onRight: Effect.succeed
  })
}

/** The GET address of a transaction, in the form (with or without the stage) that the POST used. */
const locationOf = (request: HttpServerRequest.HttpServerRequest, stage: string, transactionId: string): string => {
  const staged = stage !== "" && request.originalUrl.startsWith(`/${stage}/`)
  const path = Routes.transactionPath(transactionId, staged ? stage : undefined)
  const host = request.headers.host
  return host === undefined ? path : `http://${host}${path}`
}

const encodeQuote = Schema.encode(Quote.QuoteResponse)

const transactionNotFound = Effect.fail(
  new NotFound({ ErrorCode: ErrorBody.ErrorCodes.transactionNotFound, Message: "No transaction has this id" })
)

/**
 * A 200 answer with a JSON body, handed to node as the string itself (node
 * writes it as UTF-8) rather than encoded into a byte array first; its
 * headers are those of `HttpServerResponse.text`.
 */
const jsonResponse = (json: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.raw(json, { contentType: "application/json", contentLength: Buffer.byteLength(json) })

/**
 * The option of the handlers that never wait (no body to read, no I/O): the
 * router need not make them interruptible, which costs two runtime-flag
 * changes per request.
 */
const uninterruptible = { uninterruptible: true } as const

/** The heartbeat, the POST quote and the GET transaction. */
export const ExchangeLive = HttpApiBuilder.group(SandboxApi, "exchange", (handlers) =>
  Effect.gen(function*() {
    const config = yield* SandboxConfig
    const store = yield* Store
    // Request fibers are forked from the runtime the layer is built in, so they see this same clock.
    const clock = yield* Effect.clock
    return handlers
      .handle("heartbeat", () =>
        Effect.gen(function*() {
          const { partner } = yield* Caller
          const now = yield* DateTime.now
          return new Heartbeat({ status: "OK", partner: partner.clientId, responseTimestamp: now })
        }), uninterruptible)
      .handleRaw("createQuote", ({ headers, request }) =>
        Effect.gen(function*() {
          const { partner, requestId } = yield* Caller
          const card = yield* Effect.flatMap(readJson(request), decodeCard)
          const productLine = config.productLines.find((line) => line.id === card.productLineId)
          if (productLine === undefined) {
            return yield* badRequest(ErrorBody.ErrorCodes.invalidProductLine, "The productLineId is not known")
          }
          const transaction: Transaction = {
            id: Ids.makeTransactionId(),
            clientId: partner.clientId,
            creatorId: partner.creatorId,
            requestId,
            previousAttempts: headers.previousattempts ?? 0,
            createdAt: yield* Clock.currentTimeMillis,
            maskedCardNumber: Redaction.maskCardNumber(card.cardNumber),
            productLineId: productLine.id,
            plan: Scenarios.plan({
              cardNumber: Redacted.value(card.cardNumber),
              pin: Redacted.value(card.pinNumber),
              productLine,
              partner,
              timeScale: config.timeScale
            })
          }
          const creation = yield* store.create(transaction)
          if (creation._tag === "Duplicate") {
            return yield* badRequest(
              ErrorBody.ErrorCodes.duplicateRequest,
              "This requestId was already used; a retry must send previousAttempts increased by one"
            )
          }
          const created = creation.transaction
          yield* Journal.annotateTransaction(request, created.id)
          // The original answer is a function of the creation time, so a replay answers exactly the same body.
          const body = yield* Effect.orDie(encodeQuote(Lifecycle.quoteAt(created, created.createdAt)))
          return HttpServerResponse.unsafeJson(body, {
            status: 201,
            headers: { [Routes.Headers.location]: locationOf(request, config.stage, created.id) }
          })
        }))
      .handleRaw("getTransaction", ({ path, request }) =>
        Effect.flatMap(Caller, ({ partner }) =>
          Effect.flatMap(store.get(path.transactionId), (found): Effect.Effect<
            HttpServerResponse.HttpServerResponse,
            NotFound | BadRequest
          > => {
            if (Option.isNone(found) || found.value.clientId !== partner.clientId) {
              return transactionNotFound
            }
            const transaction = found.value
            Journal.unsafeAnnotateTransaction(request, transaction.id)
            const now = clock.unsafeCurrentTimeMillis()
            const kept = StatusBody.doneBodyAt(transaction, now)
            if (kept !== undefined) {
              return Effect.succeed(jsonResponse(kept))
            }
            return Either.match(Lifecycle.statusAt(transaction, now), {
              onLeft: (error) =>
                Effect.fail(new BadRequest(error)),
              // Encoded with the endpoint's own schema, compiled once (the platform looks up annotations per answer).
              onRight: (status) => Effect.succeed(jsonResponse(StatusBody.bodyOf(transaction, status, now)))
            })
          })), uninterruptible)
  }))
