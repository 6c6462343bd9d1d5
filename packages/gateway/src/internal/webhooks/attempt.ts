/**
 * One attempt of a webhook delivery: a `POST` of the event's body, signed
 * afresh (`Gcx-Signature` with the attempt's time), to the endpoint as the
 * key holds it now. Never fails: every way it can go wrong is an `Attempt`
 * with a short reason, which the workflow persists and retries. The answer's
 * body is read up to 512 bytes at most, and only a masked excerpt of it is
 * logged; no redirect is followed; no trace context is sent to the receiver.
 */
import { serviceText } from "@gcx/core/Redaction"
import * as Metrics from "@gcx/http/Metrics"
import * as Redirects from "@gcx/http/Redirects"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as ApiKeys from "../../ApiKeys.js"
import * as WebhookSignature from "../../WebhookSignature.js"

/**
 * Why an attempt was not a delivery, as the workflow persists it (its set is part of the stored
 * format: a node that does not know a value cannot replay the delivery). `gone`: the endpoint (or
 * its key) no longer exists, nothing to retry.
 */
export const Failure = Schema.Literals(["status", "redirect", "timeout", "unreachable", "gone", "internal"])

/** Why an attempt was not a delivery. */
export type Failure = typeof Failure.Type

/** What the engine persists of an attempt: when it was made, the receiver's status, and why it failed. */
export const Attempt = Schema.Struct({
  at: Schema.Number,
  status: Schema.optional(Schema.Number),
  failure: Schema.optional(Failure)
})

/** An attempt, as persisted. */
export type Attempt = typeof Attempt.Type

/** What an attempt sends. */
export interface Delivery {
  readonly eventId: string
  readonly endpointId: string
  readonly keyId: string
  /** The event's JSON, built once when the delivery was started. */
  readonly body: string
}

/** The most bytes of an answer's body read (for the log's excerpt). */
const maxExcerptBytes = 512

const decoder = new TextDecoder()

/** The start of an answer's body, at most `maxExcerptBytes`; the rest is never read (the stream is cancelled). */
const excerpt = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.suspend(() => {
    let bytes = new Uint8Array(0)
    return Stream.runForEachWhile(response.stream, (chunk) =>
      Effect.sync(() => {
        const room = maxExcerptBytes - bytes.length
        const next = new Uint8Array(bytes.length + Math.min(room, chunk.length))
        next.set(bytes)
        next.set(chunk.subarray(0, room), bytes.length)
        bytes = next
        return bytes.length < maxExcerptBytes
      })).pipe(
        Effect.map(() => serviceText(decoder.decode(bytes), 200)),
        Effect.orElseSucceed(() => "")
      )
  })

const counter = (name: string, description: string, attributes: Metric.Metric.AttributeSet = {}) =>
  Metric.counter(name, { description, incremental: true, attributes })

/** `gcx.gateway.webhooks.delivered`: deliveries a receiver accepted (2xx). */
export const delivered = counter("gcx.gateway.webhooks.delivered", "Webhook deliveries accepted by their receiver")

/** `gcx.gateway.webhooks.attempts.failed`, by reason (a `Failure`, or `unopened`). */
export const failedAttempts = Metrics.memoize((reason) =>
  counter("gcx.gateway.webhooks.attempts.failed", "Webhook delivery attempts that were not accepted", { reason })
)

/** `gcx.gateway.webhooks.abandoned`: deliveries given up (24 h of failures, or the endpoint removed). */
export const abandoned = counter(
  "gcx.gateway.webhooks.abandoned",
  "Webhook deliveries given up after their last attempt"
)

const gone = (at: number): Attempt => ({ at, failure: "gone" })

/** An attempt, the start of the receiver's answer (for the log only), and its reason when finer than its `failure`. */
interface Answered {
  readonly attempt: Attempt
  readonly excerpt: string
  /**
   * `unopened`: this node cannot open the endpoint's secret (sealed under a data key it does not
   * have); stored as `internal`, tried again, for a node that can.
   */
  readonly reason?: "unopened"
}

/** The outcome of a POST: a delivery (2xx), or why not, with the start of the receiver's answer. */
const answered = (at: number, response: HttpClientResponse.HttpClientResponse): Effect.Effect<Answered> =>
  Redirects.isRedirect(response.status)
    ? Effect.succeed({ attempt: { at, status: response.status, failure: "redirect" }, excerpt: "" })
    : Effect.map(excerpt(response), (text): Answered => ({
      attempt: response.status >= 200 && response.status < 300
        ? { at, status: response.status }
        : { at, status: response.status, failure: "status" },
      excerpt: text
    }))

/** What the operator is told of an `unopened` attempt. */
const unopenedHint = "this node cannot open the endpoint's secret: it was sealed under a data key this node " +
  "does not have; give it the deployment's GCX_DATA_KEY (and GCX_DATA_KEY_PREVIOUS during a rotation)"

/** Logs and counts an attempt, by its `reason` when it has one, else by its failure. */
const record = (delivery: Delivery, attempt: number, { attempt: result, excerpt, reason }: Answered) =>
  Effect.gen(function*() {
    if (result.failure === undefined) {
      yield* Metrics.update(delivered, 1)
      yield* Effect.logInfo("webhook delivered")
    } else {
      yield* Metrics.update(failedAttempts(reason ?? result.failure), 1)
      yield* Effect.logWarning("webhook delivery attempt failed").pipe(
        Effect.annotateLogs({
          reason: reason ?? result.failure,
          ...(reason === "unopened" ? { hint: unopenedHint } : {}),
          ...(result.status === undefined ? {} : { status: result.status }),
          ...(excerpt === "" ? {} : { answer: excerpt })
        })
      )
    }
  }).pipe(Effect.annotateLogs({ eventId: delivery.eventId, endpointId: delivery.endpointId, attempt }))

/** Logs and counts a delivery given up after its `attempts`-th attempt. */
export const recordAbandoned = (delivery: Delivery, attempts: number, last: Attempt) =>
  Effect.andThen(
    Metrics.update(abandoned, 1),
    Effect.logError("webhook delivery abandoned").pipe(
      Effect.annotateLogs({
        eventId: delivery.eventId,
        endpointId: delivery.endpointId,
        attempts,
        reason: last.failure ?? "unknown"
      })
    )
  )

/** The client of the deliveries: no redirect followed, no trace context sent to a receiver. */
export const deliveryClient = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  Redirects.refuseRedirects(
    HttpClient.transformResponse(client, Effect.provideService(HttpClient.TracerPropagationEnabled, false))
  )

/** The secrets that sign a delivery at `at`: the endpoint's, and the one its last rotation replaced until it expires. */
const secretsOf = (endpoint: ApiKeys.WebhookEndpoint, at: number): ReadonlyArray<Redacted.Redacted<string>> =>
  endpoint.previous !== undefined && endpoint.previous.expiresAt > at
    ? [endpoint.secret, endpoint.previous.secret]
    : [endpoint.secret]

/**
 * Makes one attempt of `delivery` (its number `attempt`) with `client` (see
 * `deliveryClient`), within `timeout`, and records it in the metrics and the log.
 */
export const make = (
  client: HttpClient.HttpClient,
  keys: ApiKeys.Service,
  timeout: Duration.Duration
) =>
(delivery: Delivery, attempt: number): Effect.Effect<Attempt> =>
  Effect.gen(function*(): Effect.fn.Return<Answered> {
    const at = yield* Clock.currentTimeMillis
    const key = yield* keys.find(delivery.keyId)
    const endpoint = Option.isSome(key)
      ? key.value.webhooks.find((endpoint) => endpoint.id === delivery.endpointId)
      : undefined
    if (endpoint === undefined) {
      // a secret this node cannot open (its data keys mistaken) is not a deleted endpoint: the delivery waits
      const unopened = Option.isSome(key) && key.value.webhooksLeftOut?.includes(delivery.endpointId) === true
      // stored as `internal` (see `Failure`); counted and logged as `unopened`
      return unopened
        ? { attempt: { at, failure: "internal" }, excerpt: "", reason: "unopened" }
        : { attempt: gone(at), excerpt: "" }
    }
    const request = HttpClientRequest.post(endpoint.url).pipe(
      HttpClientRequest.setHeaders({
        [WebhookSignature.headerName]: WebhookSignature.sign(
          secretsOf(endpoint, at),
          delivery.body,
          Math.floor(at / 1000)
        ),
        [WebhookSignature.eventIdHeaderName]: delivery.eventId,
        "user-agent": "gcx-webhooks"
      }),
      HttpClientRequest.bodyText(delivery.body, "application/json")
    )
    return yield* client.execute(request).pipe(
      Effect.flatMap((response) => answered(at, response)),
      Effect.catchTag("HttpClientError", () => Effect.succeed({ attempt: unreachable(at), excerpt: "" })),
      Effect.timeoutOption(timeout),
      Effect.map(Option.getOrElse(() => ({ attempt: timedOut(at), excerpt: "" })))
    )
  }).pipe(
    // a lookup that died (the database) is an attempt to make again, never the workflow's defect
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.flatMap(Clock.currentTimeMillis, (at) =>
          Effect.as(
            Effect.logWarning("a webhook delivery attempt could not be made", cause),
            {
              attempt: { at, failure: "internal" },
              excerpt: ""
            } satisfies Answered
          ))
    ),
    Effect.tap((answered) => record(delivery, attempt, answered)),
    Effect.map(({ attempt }): Attempt => attempt),
    Effect.withSpan("WebhookDelivery.attempt", {
      attributes: { eventId: delivery.eventId, endpointId: delivery.endpointId, attempt }
    }, { captureStackTrace: false })
  )

const unreachable = (at: number): Attempt => ({ at, failure: "unreachable" })

const timedOut = (at: number): Attempt => ({ at, failure: "timeout" })
