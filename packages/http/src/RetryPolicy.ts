/**
 * What the exchange client retries and how it paces retries (ARCHITECTURE.md,
 * "Retries"): only what `shouldRetry` accepts for the operation, exponential
 * backoff with jitter, `Retry-After` honoured, a cap on attempts per call, a
 * client-wide `RetryBudget`, and one immediate retry after a 401 once the
 * token has been invalidated. Every delay goes through `Effect.sleep`, so
 * `TestClock` drives it.
 */
import * as Errors from "@gcx/core/Errors"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Metrics from "./Metrics.js"
import * as RetryBudget from "./RetryBudget.js"

/** How many attempts a call makes and how long it waits between them. */
export interface Settings {
  /** Attempts per call, the first one included (1 disables retries). */
  readonly maxAttempts: number
  /** The backoff before the first retry; it doubles on every further retry. */
  readonly baseDelay: Duration.Duration
  /** The longest wait before a retry. A `Retry-After` longer than this is not waited for: the error surfaces. */
  readonly maxDelay: Duration.Duration
  /** The client-wide retry budget. */
  readonly budget: RetryBudget.Settings
}

/** 4 attempts per call, backoff from 250 ms up to 10 s, and the default `RetryBudget`. */
export const defaults: Settings = {
  maxAttempts: 4,
  baseDelay: Duration.millis(250),
  maxDelay: Duration.seconds(10),
  budget: RetryBudget.defaults
}

/** The calls of the exchange client; what may be retried depends on it. */
export type Operation = "heartbeat" | "createQuote" | "getTransaction"

/** The errors a call can retry on. */
export type RetryableError = Errors.ServiceError | Errors.TokenError

/** What a retry hook is told before each retry. */
export interface RetryInfo {
  readonly operation: Operation
  /** The attempt about to be made: 2 for the first retry (counting the `previousAttempts` given to `execute`). */
  readonly attempt: number
  /** The wait before that attempt (zero for the retry after a 401). */
  readonly delay: Duration.Duration
  /** The failure of the previous attempt. */
  readonly error: RetryableError
}

/** A successful call, with the attempts it took and the total time spent waiting between them. */
export interface Attempted<A> {
  readonly value: A
  /** Attempts of the request, the successful one and the `previousAttempts` given to `execute` included. */
  readonly attempts: number
  readonly retryDelay: Duration.Duration
}

const postRetryReasons: ReadonlyArray<Errors.TransportError["reason"]> = ["Connect", "Reset", "Timeout"]

/**
 * A failure after which the request may have been processed: no answer, a
 * cut-off one, a garbled 2xx, or an answer too large to read.
 */
const leavesOutcomeUnknown = (error: RetryableError): boolean =>
  (error._tag === "TransportError" && error.reason !== "Connect" && error.reason !== "Aborted") ||
  isGarbledSuccess(error) || isUnread(error)

/** A 2xx answer whose body did not decode: the request was processed, its answer is unreadable. */
const isGarbledSuccess = (error: RetryableError): boolean =>
  error._tag === "UnexpectedResponse" && error.reason === undefined && error.httpStatus !== undefined &&
  error.httpStatus >= 200 && error.httpStatus < 300

/** An answer larger than the client reads (`maxResponseBytes`): whatever it said is unknown, as if lost. */
const isUnread = (error: RetryableError): boolean => error._tag === "UnexpectedResponse" && error.reason === "TooLarge"

/**
 * Whether the client retries `error` (with backoff) for this `operation`.
 * Unlike `Errors.isTransient`, which says whether a condition may pass by
 * itself, this is the client's decision for one operation.
 * - POST quote: 500, 503 (and 502, 504), 429, connection refused, reset or
 *   timed out, a 2xx whose body did not decode and an answer past the size cap
 *   (the answer was lost in effect). It is retried with the same requestId and
 *   `previousAttempts + 1`, so the service replays the original answer if an
 *   earlier attempt was processed: that is what makes a retry after a 500 safe.
 * - GET and heartbeat: every transient error (500 included).
 * - Token endpoint: 429, 5xx, or no answer.
 * - Never: card outcomes, MerchantUnavailable, request faults, other
 *   undecodable answers, redirects (never followed, and not transient), and
 *   401 (which gets its own single retry, see `execute`).
 *
 * `uncertain` says that an earlier attempt of the same POST may have been
 * processed (it got no answer, a cut-off one or a garbled 2xx): the POST is then
 * retried like a GET, on every transient failure, so that a transaction that
 * exists is never given up.
 */
export const shouldRetry = (operation: Operation, error: RetryableError, uncertain = false): boolean => {
  // A POST whose earlier attempt may have been processed is retried on every transient failure:
  // giving up would lose a transaction that exists, and the requestId makes the retry safe.
  const strictPost = operation === "createQuote" && !uncertain
  switch (error._tag) {
    case "Unauthorized":
      return false
    case "TokenError":
      return error.httpStatus === undefined || error.httpStatus === 429 || error.httpStatus >= 500
    case "TransportError":
      return strictPost ? postRetryReasons.includes(error.reason) : error.reason !== "Aborted"
    case "ServerError":
      return true
    case "UnexpectedResponse":
      return operation === "createQuote" && (isGarbledSuccess(error) || isUnread(error))
    default:
      return Errors.isRetryable(error)
  }
}

/**
 * The jittered exponential backoff before retry number `retry` (1 for the
 * first): `min(maxDelay, baseDelay * 2^(retry - 1))`, scaled by a random
 * factor in [0.5, 1).
 */
export const backoff = (settings: Settings, retry: number): Effect.Effect<Duration.Duration> =>
  Random.next.pipe(Effect.map((random) => {
    const exponential = Duration.toMillis(settings.baseDelay) * 2 ** Math.max(0, retry - 1)
    const capped = Math.min(Duration.toMillis(settings.maxDelay), exponential)
    return Duration.millis(Math.round(capped * (0.5 + random / 2)))
  }))

/**
 * The wait before retry number `retry` after `error`: the backoff, but never
 * less than the error's `Retry-After`. `None` when `Retry-After` asks for more
 * than `maxDelay`: the call then fails with the error, which carries
 * `retryAfterMillis` for the caller to act on.
 */
export const delayFor = (
  settings: Settings,
  retry: number,
  error: RetryableError
): Effect.Effect<Option.Option<Duration.Duration>> => {
  const retryAfter = Errors.retryAfterOf(error)
  if (retryAfter !== undefined && retryAfter > Duration.toMillis(settings.maxDelay)) {
    return Effect.succeed(Option.none())
  }
  return backoff(settings, retry).pipe(
    Effect.map((delay) =>
      Option.some(retryAfter === undefined ? delay : Duration.max(delay, Duration.millis(retryAfter)))
    )
  )
}

/**
 * Records the attempts and the total retry delay on the error a call ends
 * with; for the error that ends a POST, what resumes it
 * (`Errors.withAttempts`, `Errors.postResumption`).
 */
export const recordAttempts = <E extends RetryableError>(
  error: E,
  attempts: number,
  retryDelay: Duration.Duration,
  post?: Errors.PostFailure | undefined,
  stopped?: Errors.Stopped | undefined
): E => Errors.withAttempts(error, attempts, retryDelay, post, stopped)

/** An answer the service may give after processing the request: a 500, 502 or 504. */
const answeredAfterProcessing = (error: RetryableError): boolean =>
  error._tag === "ServerError" ||
  (error._tag === "ServiceUnavailable" && (error.httpStatus === 502 || error.httpStatus === 504))

/**
 * A card or merchant outcome: the service's answer to the request, whatever
 * its attempts before were (a request it processed already is answered as it
 * was the first time). A POST that ends in one leaves nothing unknown.
 */
const isVerdict = (error: RetryableError): boolean => {
  const group = Errors.groupOf(error)
  return group === "card" || group === "merchant"
}

/**
 * What a retry log line says of the error: its tag, and its ErrorCode and HTTP
 * status when known. Never its message, which can echo the server's text.
 */
const logAnnotations = (error: RetryableError): Record<string, unknown> => {
  const annotations: Record<string, unknown> = { error: error._tag }
  if ("errorCode" in error && error.errorCode !== undefined) annotations.errorCode = error.errorCode
  if (error.httpStatus !== undefined) annotations.httpStatus = error.httpStatus
  return annotations
}

/**
 * Runs `attempt` until it succeeds or may no longer be retried.
 * - `attempt` receives `previousAttempts`: `options.previousAttempts` (default
 *   0) for the first attempt, then one more for every resend.
 * - An error that `shouldRetry` accepts is retried after `delayFor`, if the
 *   attempt cap allows it and the budget grants a retry; otherwise the call
 *   fails with the last error. The cap and the backoff count this call's
 *   attempts only.
 * - A 401 (`Unauthorized`) is retried once, at once and without drawing from the
 *   budget: `attempt` is expected to have invalidated the refused token. It
 *   counts as an attempt. A second 401 in a row fails the call, unless an
 *   earlier attempt may have been processed (a POST without an answer): then
 *   it is retried with backoff within the cap and the budget, as giving up
 *   would lose the transaction. A 401 after another failure gets its own
 *   recovery (the fresh token may have expired since).
 * - `attempts` (on the result, on the errors and in `RetryInfo`) counts
 *   every attempt of the request: the `previousAttempts` given plus those of
 *   this call. So `previousAttempts: error.attempts` resumes a failed call.
 * - Errors leave with `attempts` and `retryDelayMillis` recorded; the one
 *   that ends a POST an attempt of which may have been processed (no answer,
 *   a cut or garbled one, a 500, 502 or 504) with `outcomeUnknown`, and a
 *   `TokenError` with the POST's `requestId` too (`Errors.postResumption`);
 *   one whose retries the budget stopped with `retryBudgetExhausted`.
 * - Each retry is logged at debug level with `logAnnotations`.
 */
export const execute = <A, E extends RetryableError, R>(options: {
  readonly operation: Operation
  readonly settings: Settings
  readonly budget: RetryBudget.RetryBudget
  readonly attempt: (previousAttempts: number) => Effect.Effect<A, E, R>
  readonly onRetry?: ((info: RetryInfo) => Effect.Effect<void>) | undefined
  /** Attempts of the same request made before this call (default 0). */
  readonly previousAttempts?: number | undefined
  /**
   * The request's requestId: for a POST, what the error that ends it records
   * when one of its attempts may have been processed (`Errors.PostFailure`),
   * so that it can be resumed.
   */
  readonly requestId?: string | undefined
}): Effect.Effect<Attempted<A>, E, R> => {
  const { budget, operation, settings } = options
  const before = options.previousAttempts ?? 0
  const postRequestId = operation === "createQuote" ? options.requestId : undefined
  const retry = (info: RetryInfo) =>
    Effect.logDebug(`retrying ${operation}`).pipe(
      Effect.annotateLogs({
        attempt: info.attempt,
        delayMillis: Duration.toMillis(info.delay),
        ...logAnnotations(info.error)
      }),
      Effect.andThen(Metrics.recordRetry(operation, info.error)),
      Effect.andThen(options.onRetry ? options.onRetry(info) : Effect.void),
      Effect.andThen(Effect.sleep(info.delay))
    )
  // `attempt` counts this call's attempts, from 1.
  const loop = (
    attempt: number,
    retryDelay: Duration.Duration,
    reauthorized: boolean,
    uncertain: boolean,
    // an attempt may have been processed (a 500, 502 or 504 too, which `uncertain` does not count)
    processed: boolean
  ): Effect.Effect<Attempted<A>, E, R> =>
    Effect.matchEffect(options.attempt(before + attempt - 1), {
      onSuccess: (value) => Effect.succeed({ value, attempts: before + attempt, retryDelay }),
      onFailure: (error) => {
        const stillUncertain = uncertain || leavesOutcomeUnknown(error)
        const stillProcessed = processed || stillUncertain || answeredAfterProcessing(error)
        const post = postRequestId === undefined
          ? undefined
          : { requestId: postRequestId, outcomeUnknown: stillProcessed && !isVerdict(error) }
        const fail = Effect.fail(recordAttempts(error, before + attempt, retryDelay, post))
        const next = { operation, attempt: before + attempt + 1, error }
        if (error._tag === "Unauthorized" && !reauthorized) {
          return retry({ ...next, delay: Duration.zero }).pipe(
            Effect.andThen(loop(attempt + 1, retryDelay, true, stillUncertain, stillProcessed))
          )
        }
        // Two 401s in a row fail the call, unless an earlier attempt may have been processed: then the
        // 401 is retried like a transient failure (backoff, cap, budget), so that the transaction is not lost.
        const retryable = error._tag === "Unauthorized" ? stillUncertain : shouldRetry(operation, error, stillUncertain)
        if (attempt >= settings.maxAttempts || !retryable) return fail
        return delayFor(settings, attempt, error).pipe(
          Effect.flatMap(Option.match({
            onNone: () => fail,
            onSome: (delay) =>
              Effect.flatMap(budget.take, (granted) =>
                granted
                  ? retry({ ...next, delay }).pipe(
                    // a failure other than 401: a later 401 is not "in a row" and gets its recovery
                    Effect.andThen(
                      loop(attempt + 1, Duration.sum(retryDelay, delay), false, stillUncertain, stillProcessed)
                    )
                  )
                  : Effect.logDebug(`retry budget exhausted; ${operation} fails`).pipe(
                    Effect.annotateLogs(logAnnotations(error)),
                    Effect.andThen(Metrics.recordBudgetExhausted(operation)),
                    Effect.andThen(Effect.fail(
                      recordAttempts(error, before + attempt, retryDelay, post, { retryBudgetExhausted: true })
                    ))
                  ))
          }))
        )
      }
    })
  // A call that resumes earlier attempts (previousAttempts > 0) may find its request processed already.
  return loop(1, Duration.zero, false, before > 0, before > 0)
}
