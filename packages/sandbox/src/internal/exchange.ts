import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Card, ErrorBody, Ids, Quote, Redaction, Routes } from "@gcx/core"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import type * as HttpApiError from "effect/http-api/HttpApiError"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as SchemaIssue from "effect/SchemaIssue"
import type * as Types from "effect/Types"
import {
  Authorization,
  BadRequest,
  Caller,
  Heartbeat,
  maxRequestIdLength,
  NotFound,
  SandboxApi,
  SchemaErrors,
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

const badRequestOf = (ErrorCode: string, Message: string) => new BadRequest({ ErrorCode, Message })

const badRequest = (ErrorCode: string, Message: string) => Effect.fail(badRequestOf(ErrorCode, Message))

const requestIdSyntax = new RegExp(`^[A-Za-z0-9_-]{1,${maxRequestIdLength}}$`)

const unauthorized = (Message: string) =>
  Effect.fail(new Unauthorized({ ErrorCode: ErrorBody.ErrorCodes.unauthorized, Message }))

const partnerNotFound = badRequest(ErrorBody.ErrorCodes.partnerNotFound, "The partner is not recognized")

const apiKeyHeader = Routes.Headers.apiKey
const requestIdHeader = Routes.Headers.requestId.toLowerCase()

/**
 * The bearer token, the partner, its x-api-key and the requestId header,
 * checked in that order; the endpoint then runs with its `Caller`. It runs on
 * every exchange call, so the checks are plain code between the two effects
 * they need (the token's verification against `Clock`, and whether the
 * partner is enabled).
 */
export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const config = yield* SandboxConfig
    const tokens = yield* Tokens
    const store = yield* Store
    const partners = new Map(config.partners.map((partner) => [partner.clientId, partner]))
    /** The header checks, once the partner is known and enabled. */
    const checkHeaders = (
      request: HttpServerRequest.HttpServerRequest,
      partner: Partner
    ): Result.Result<Caller["Service"], BadRequest> => {
      const { headers } = request
      if (!safeEqual(headers[apiKeyHeader] ?? "", partner.apiKey)) {
        return Result.fail(badRequestOf(ErrorBody.ErrorCodes.invalidApiKey, "The x-api-key header is invalid"))
      }
      const requestId = headers[requestIdHeader]?.trim() ?? ""
      if (requestId === "") {
        return Result.fail(badRequestOf(ErrorBody.ErrorCodes.missingRequestId, "The requestId header is required"))
      }
      if (!requestIdSyntax.test(requestId)) {
        return Result.fail(badRequestOf(
          ErrorBody.ErrorCodes.invalidParameter,
          `requestId must be 1 to ${maxRequestIdLength} characters of A-Z, a-z, 0-9, - and _`
        ))
      }
      return Result.succeed({ partner, requestId })
    }
    return Authorization.of({
      bearer: (httpEffect, { credential }) => {
        const value = Redacted.value(credential)
        if (value === "") return unauthorized("A bearer token is required")
        return Effect.matchEffect(tokens.verify(value), {
          onFailure: (error) => unauthorized(error.message),
          onSuccess: (claims) => {
            const partner = partners.get(claims.sub)
            if (partner === undefined) return partnerNotFound
            return Effect.flatMap(store.isEnabled(partner.clientId), (enabled) => {
              if (!enabled) return partnerNotFound
              return HttpServerRequest.HttpServerRequest.use((request): Effect.Effect<
                HttpServerResponse.HttpServerResponse,
                BadRequest | Types.unhandled
              > =>
                Result.match(checkHeaders(request, partner), {
                  onFailure: Effect.fail,
                  onSuccess: (caller) => Effect.provideService(httpEffect, Caller, caller)
                })
              )
            })
          }
        })
      }
    })
  })
)

/** The parameter a schema issue is about: the path of its first pointer, as the request spelled it. */
const parameterOf = (issue: SchemaIssue.Issue): ReadonlyArray<string> => {
  switch (issue._tag) {
    case "Pointer":
      return [issue.path.map(String).join("."), ...parameterOf(issue.issue).slice(1)]
    case "Composite":
    case "AnyOf":
      return issue.issues.flatMap(parameterOf)
    case "Filter":
    case "Encoding":
      return parameterOf(issue.issue)
    default:
      return []
  }
}

/**
 * Answers a header or path parameter that does not decode with 400
 * `request.invalid.parameter`, naming the parameters (never their values). A
 * body the sandbox cannot encode stays a defect (500).
 */
export const SchemaErrorsLive = HttpApiMiddleware.layerSchemaErrorTransform(
  SchemaErrors,
  (error: HttpApiError.HttpApiSchemaError) => {
    if (error.kind === "Body" || error.kind === "ResponseHeaders") return Effect.die(error)
    const names = Array.from(new Set(parameterOf(error.cause.issue)))
    return Effect.fail(
      badRequestOf(ErrorBody.ErrorCodes.invalidParameter, `Invalid parameter: ${names.join(", ")}`)
    )
  }
)

/**
 * The card of a POST body. The reasons name the field and never echo its
 * value (`Card.validateResult`).
 */
const decodeCard = (body: unknown): Effect.Effect<Card.Card, BadRequest> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return badRequest(ErrorBody.ErrorCodes.invalidBody, "The request body must be a JSON object")
  }
  const card = (body as { readonly card?: unknown }).card
  if (typeof card !== "object" || card === null || Array.isArray(card)) {
    return badRequest(ErrorBody.ErrorCodes.invalidParameter, "card must be an object")
  }
  return Result.match(Card.validateResult(card), {
    onFailure: (error) => badRequest(ErrorBody.ErrorCodes.invalidParameter, error.message),
    onSuccess: Effect.succeed
  })
}

/**
 * The path the client sent, stage segment included: the node request's URL
 * (the platform's `url` has the stage left out by the middleware, and its
 * `originalUrl` is absolute).
 */
const sentPath = (request: HttpServerRequest.HttpServerRequest): string => {
  const url = NodeHttpServerRequest.toIncomingMessage(request).url ?? request.url
  if (url.startsWith("/")) return url
  try {
    // An absolute request-target (`POST http://host/sandbox/v3/...`)
    return new URL(url).pathname
  } catch {
    return url
  }
}

/** The GET address of a transaction, in the form (with or without the stage) that the POST used. */
const locationOf = (request: HttpServerRequest.HttpServerRequest, stage: string, transactionId: string): string => {
  const staged = stage !== "" && sentPath(request).startsWith(`/${stage}/`)
  const path = Routes.transactionPath(transactionId, staged ? stage : undefined)
  const host = request.headers.host
  return host === undefined ? path : `http://${host}${path}`
}

const encodeQuote = Schema.encodeEffect(Quote.QuoteResponse)

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
    // Request fibers are forked from the context the layer is built in, so they see this same clock.
    const clock = yield* Clock.Clock
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
          return HttpServerResponse.jsonUnsafe(body, {
            status: 201,
            headers: { [Routes.Headers.location]: locationOf(request, config.stage, created.id) }
          })
        }))
      .handleRaw("getTransaction", ({ params, request }) =>
        Caller.use(({ partner }) =>
          Effect.flatMap(store.get(params.transactionId), (found): Effect.Effect<
            HttpServerResponse.HttpServerResponse,
            NotFound | BadRequest
          > => {
            if (Option.isNone(found) || found.value.clientId !== partner.clientId) {
              return transactionNotFound
            }
            const transaction = found.value
            Journal.unsafeAnnotateTransaction(request, transaction.id)
            const now = clock.currentTimeMillisUnsafe()
            const kept = StatusBody.doneBodyAt(transaction, now)
            if (kept !== undefined) {
              return Effect.succeed(jsonResponse(kept))
            }
            return Result.match(Lifecycle.statusAt(transaction, now), {
              onFailure: (error) =>
                Effect.fail(new BadRequest(error)),
              // Encoded with the endpoint's own schema, compiled once.
              onSuccess: (status) => Effect.succeed(jsonResponse(StatusBody.bodyOf(transaction, status, now)))
            })
          })
        ), uninterruptible)
  }))
