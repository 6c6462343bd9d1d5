/**
 * One HTTP exchange: send a request, read the answer (at most a cap of bytes)
 * within the request timeout, and turn every failure to get an answer into a
 * `TransportError` with a reason. A redirect or an answer over the cap is an
 * `UnexpectedResponse`. Never leaks the request (its headers and body) into an
 * error.
 */
import * as Errors from "@gcx/core/Errors"
import { serviceText } from "@gcx/core/Redaction"
import * as TolerantReader from "@gcx/core/TolerantReader"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Headers from "effect/http/Headers"
import type * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as Body from "./body.js"
import { isRedirect } from "./redirects.js"
import type { TraceIds } from "./serviceText.js"

/** An HTTP answer, read in full. */
export interface Answer {
  readonly status: number
  readonly headers: Headers.Headers
  readonly body: string
  /** Its SVC-TRACE-ID, when it looks like a trace id (`TraceIds`). */
  readonly traceId: string | undefined
}

/** What is known of a request, to put on its errors. */
export interface RequestContext {
  readonly requestId?: string | undefined
  readonly transactionId?: string | undefined
}

/** The header names that must always be redacted where Effect logs or traces requests. */
export const secretHeaderNames: ReadonlyArray<string> = ["authorization", "x-api-key"]

/**
 * The service's header texts that gcx keeps only checked (`svc-trace-id`) or masked (`location`): they
 * may echo a card number, so they are redacted too where the platform's `http.client` span records every
 * header of an answer (the token request's; exchange calls have their own span, without headers).
 */
export const serviceTextHeaderNames: ReadonlyArray<string> = ["svc-trace-id", "location"]

const withNames = (
  names: ReadonlyArray<string | RegExp>,
  wanted: ReadonlyArray<string>
): ReadonlyArray<string | RegExp> => {
  const missing = wanted.filter((secret) =>
    !names.some((name) => typeof name === "string" ? name.toLowerCase() === secret : name.test(secret))
  )
  return missing.length === 0 ? names : [...names, ...missing]
}

/**
 * Runs an effect with `wanted` among `Headers.CurrentRedactedNames`. When they are already there, the
 * effect runs as it is: providing the reference per request costs more than the check.
 */
export const redacting = (wanted: ReadonlyArray<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.withFiber<A, E, R>((fiber) => {
    const names = fiber.getRef(Headers.CurrentRedactedNames)
    const redacted = withNames(names, wanted)
    return redacted === names ? effect : Effect.provideService(effect, Headers.CurrentRedactedNames, redacted)
  })

/** Runs an effect with `authorization` and `x-api-key` among `Headers.CurrentRedactedNames` (the default). */
export const redactingSecrets: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = redacting(
  secretHeaderNames
)

const codes: ReadonlyArray<readonly [Errors.TransportError["reason"], ReadonlyArray<string>]> = [
  ["Connect", ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]],
  ["Reset", ["ECONNRESET", "EPIPE", "ECONNABORTED", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]],
  ["Timeout", ["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]],
  ["Aborted", ["ABORT_ERR", "UND_ERR_ABORTED"]]
]

/** The error codes and names found along a cause chain (`cause`, and `errors` of an AggregateError). */
const collectCodes = (cause: unknown, out: Array<string> = [], depth = 0): Array<string> => {
  if (depth > 8 || typeof cause !== "object" || cause === null) return out
  const record = cause as {
    readonly code?: unknown
    readonly name?: unknown
    readonly cause?: unknown
    readonly errors?: unknown
  }
  if (typeof record.code === "string") out.push(record.code)
  if (record.name === "AbortError") out.push("ABORT_ERR")
  if (record.name === "TimeoutError") out.push("ETIMEDOUT")
  collectCodes(record.cause, out, depth + 1)
  if (Array.isArray(record.errors)) { for (const inner of record.errors) collectCodes(inner, out, depth + 1) }
  return out
}

/** The reason of a transport failure, read from the codes of its cause; `fallback` when none is known. */
export const reasonOf = (
  cause: unknown,
  fallback: Errors.TransportError["reason"]
): { readonly reason: Errors.TransportError["reason"]; readonly code: string | undefined } => {
  const found = collectCodes(cause)
  for (const [reason, known] of codes) {
    const code = found.find((code) => known.includes(code))
    if (code !== undefined) return { reason, code }
  }
  return { reason: fallback, code: found[0] }
}

const describe: Record<Errors.TransportError["reason"], string> = {
  Connect: "could not connect",
  Reset: "the connection was reset before the answer was complete",
  Timeout: "no answer in time",
  Aborted: "the request was aborted",
  Other: "the request failed without an answer"
}

/** `METHOD /path` of a request: no host, no query, no headers. */
export const describeRequest = (request: HttpClientRequest.HttpClientRequest): string => {
  try {
    return `${request.method} ${new URL(request.url).pathname}`
  } catch {
    return request.method
  }
}

const transportError = (
  request: HttpClientRequest.HttpClientRequest,
  context: RequestContext,
  reason: Errors.TransportError["reason"],
  code?: string
): Errors.TransportError =>
  new Errors.TransportError({
    reason,
    message: `${describeRequest(request)}: ${describe[reason]}${code === undefined ? "" : ` (${code})`}`,
    ...(context.requestId !== undefined ? { requestId: context.requestId } : {}),
    ...(context.transactionId !== undefined ? { transactionId: context.transactionId } : {})
  })

const fromHttpClientError = (
  request: HttpClientRequest.HttpClientRequest,
  context: RequestContext,
  error: HttpClientError.HttpClientError
): Errors.TransportError => {
  // A failure while reading the body (a reason with a response) means the answer
  // was cut off: the request was received, and may have been processed.
  const { code, reason } = reasonOf(error.reason.cause, "response" in error.reason ? "Reset" : "Other")
  return transportError(request, context, reason, code)
}

/** The live clock: the default of the `Clock` reference (a test replaces it with `TestClock`). */
const liveClock = Context.get(Context.empty(), Clock.Clock)

/** The longest delay `setTimeout` keeps (about 24.8 days). */
const maxTimerMillis = 2 ** 31 - 1

/**
 * `Effect.timeoutOrElse` failing with `onTimeout()`, for one request. With the
 * live `Clock` it forks one fiber (the effect's) and times it with
 * `setTimeout`, where `Effect.timeoutOrElse` races the effect with a sleeping
 * fiber. With any other clock (`TestClock`) it is `Effect.timeoutOrElse`. On
 * timeout the effect is interrupted (the request aborted) before the failure.
 */
export const timeoutFail = <A, E, R, E2>(
  effect: Effect.Effect<A, E, R>,
  timeout: Duration.Duration,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.clockWith((clock) => {
    const millis = Duration.toMillis(timeout)
    if (clock !== liveClock || !(millis <= maxTimerMillis)) {
      return Effect.timeoutOrElse(effect, { duration: timeout, orElse: () => Effect.fail(onTimeout()) })
    }
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.forkChild(restore(effect), { startImmediately: true }), (fiber) =>
        restore(Effect.callback<A, E | E2>((resume) => {
          // A fiber that has already ended (its effect was synchronous) needs no timer.
          const ended = fiber.pollUnsafe()
          if (ended !== undefined) {
            resume(ended)
            return
          }
          const timer = setTimeout(() => {
            removeObserver()
            resume(Effect.andThen(Fiber.interrupt(fiber), Effect.fail(onTimeout())))
          }, millis)
          const removeObserver = fiber.addObserver((exit: Exit.Exit<A, E>) => {
            clearTimeout(timer)
            resume(exit)
          })
          return Effect.suspend(() => {
            clearTimeout(timer)
            removeObserver()
            return Fiber.interrupt(fiber)
          })
        })))
    )
  })

/** What bounds one exchange, and how its trace id is read. */
export interface Limits {
  /** The longest wait for the whole answer, body included. */
  readonly timeout: Duration.Duration
  /** The most bytes of body read; a larger answer is an `UnexpectedResponse` (reason `TooLarge`). */
  readonly maxResponseBytes: number
  /** The client's reader of SVC-TRACE-ID, which keeps only what looks like a trace id. */
  readonly traceIds: TraceIds
}

/** A `Location` as an error may name it: quoted, control characters escaped, long runs of digits masked, cut to 200. */
const describeLocation = (location: string | undefined): string =>
  location === undefined ? "without a Location" : `to ${JSON.stringify(serviceText(location, 200))}`

const unexpected = (
  request: HttpClientRequest.HttpClientRequest,
  context: RequestContext,
  response: { readonly status: number; readonly headers: Headers.Headers; readonly traceId: string | undefined },
  reason: "Redirect" | "TooLarge",
  maxResponseBytes: number
): Errors.UnexpectedResponse => {
  const traceId = response.traceId
  return new Errors.UnexpectedResponse({
    reason,
    message: reason === "Redirect"
      ? `${describeRequest(request)}: HTTP ${response.status} redirect ${
        describeLocation(response.headers["location"])
      }; gcx never follows redirects`
      : `${
        describeRequest(request)
      }: the answer (HTTP ${response.status}) is larger than ${maxResponseBytes} bytes; it was not read`,
    httpStatus: response.status,
    ...(traceId !== undefined ? { traceId } : {}),
    ...(context.requestId !== undefined ? { requestId: context.requestId } : {}),
    ...(context.transactionId !== undefined ? { transactionId: context.transactionId } : {})
  })
}

/**
 * Sends `request` and reads its answer within `limits.timeout`. A missing or
 * cut-off answer fails with a `TransportError` (`Timeout` when the time ran
 * out; the request is then aborted). A redirect (3xx), never followed, fails
 * with an `UnexpectedResponse` naming the status and the `Location`; a body
 * over `limits.maxResponseBytes` is not read past the cap and fails with an
 * `UnexpectedResponse` (`TooLarge`). Any other status is an `Answer`: mapping
 * statuses to errors is the caller's job. The client is expected to refuse
 * redirects itself (`refuseRedirects`).
 */
export const send = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  limits: Limits,
  context: RequestContext
): Effect.Effect<Answer, Errors.TransportError | Errors.UnexpectedResponse> =>
  client.execute(request).pipe(
    Effect.catch((error) => Effect.fail(fromHttpClientError(request, context, error))),
    Effect.flatMap((response) => {
      // Read once: undici's response builds its `headers` anew on every access.
      const headers = response.headers
      return Effect.flatMap(limits.traceIds(headers), (traceId) => {
        const answered = { status: response.status, headers, traceId }
        return isRedirect(answered.status)
          // A redirect's body is left unread: nothing of it is buffered beyond the socket's.
          ? Effect.fail(unexpected(request, context, answered, "Redirect", limits.maxResponseBytes))
          : Effect.flatMap(
            Effect.catch(
              Body.read(response, headers, limits.maxResponseBytes),
              (error) => Effect.fail(fromHttpClientError(request, context, error))
            ),
            (body): Effect.Effect<Answer, Errors.UnexpectedResponse> =>
              body._tag === "TooLarge"
                ? Effect.fail(unexpected(request, context, answered, "TooLarge", limits.maxResponseBytes))
                : Effect.succeed({ ...answered, body: body.text })
          )
      })
    }),
    (effect) => timeoutFail(effect, limits.timeout, () => transportError(request, context, "Timeout")),
    redactingSecrets
  )

/**
 * A header of an answer. The platform's `Headers` have lower-case names, so
 * the name is looked up directly rather than compared with every header.
 */
export const header = (answer: { readonly headers: Headers.Headers }, name: string): string | undefined =>
  answer.headers[name.toLowerCase()]

/** Whether a status is a success (2xx). */
export const isSuccess = (status: number): boolean => status >= 200 && status < 300

/** Reads an answer's body as `A`: a function of the answer and what is known of its request. */
export type JsonDecoder<A> = (
  answer: Answer,
  context: Errors.UnexpectedContext
) => Result.Result<TolerantReader.Read<A>, Errors.UnexpectedResponse>

/**
 * A decoder of answers whose JSON body must decode with `schema`, dropping the
 * optional hints of `shape` it cannot read (`TolerantReader`). A body that is
 * not JSON or does not decode is an `UnexpectedResponse` naming the failing
 * paths (never the values) with what is known of the request; never a defect.
 * Build it once per schema: it runs synchronously, without an Effect per answer.
 */
export const jsonDecoder = <A>(schema: Schema.Decoder<A>, shape: TolerantReader.Shape): JsonDecoder<A> => {
  const decode = TolerantReader.decoder(schema, shape)
  return (answer, context) => {
    let json: unknown
    try {
      json = JSON.parse(answer.body)
    } catch {
      return Result.fail(Errors.unexpectedResponse(context, "the body is not JSON"))
    }
    return Result.mapError(decode(json), (error) => Errors.unexpectedResponse(context, error))
  }
}
