/**
 * What a client keeps of the service's text beyond its Error bodies (which
 * `Errors.fromResponse` reads):
 * - SVC-TRACE-ID: the value when it looks like a trace id
 *   (`Redaction.checkTraceId`), else nothing. The first trace id a client
 *   drops is logged, once, with the reason and never the value (it may be an
 *   echoed card number, or 15,000 characters).
 * - Step tags: as `Redaction.serviceText` keeps them (masked, cut to 1,024).
 */
import * as Redaction from "@gcx/core/Redaction"
import * as Transaction from "@gcx/core/Transaction"
import * as Effect from "effect/Effect"
import type * as Headers from "effect/http/Headers"
import * as Result from "effect/Result"

/** Reads the trace id of an answer's headers, for one client. */
export type TraceIds = (headers: Headers.Headers) => Effect.Effect<string | undefined>

const why: Readonly<Record<Redaction.TraceIdProblem, string>> = {
  length: `it is empty or longer than ${Redaction.maxTraceId} characters`,
  characters: "it holds characters other than letters, digits and . _ : -",
  digits: "it holds a run of 8 or more digits, which could be a card number"
}

const none = Effect.succeed(undefined)

/**
 * A reader of trace ids that logs the first one it drops as a warning, and no
 * later one; `source` names who sent it (`the service`, `the token endpoint`).
 */
export const traceIds = (source: string): TraceIds => {
  let told = false
  return (headers) => {
    const value = headers["svc-trace-id"]
    if (value === undefined) return none
    const checked = Redaction.checkTraceId(value)
    if (Result.isSuccess(checked)) return Effect.succeed(checked.success)
    if (told) return none
    told = true
    return Effect.as(
      Effect.logWarning(
        `${source} sent an SVC-TRACE-ID that does not look like a trace id; it is dropped, and later ones without this warning`
      ).pipe(Effect.annotateLogs({ reason: checked.failure, why: why[checked.failure] })),
      undefined
    )
  }
}

const isKept = (step: Transaction.Step): boolean => Redaction.serviceText(step.descriptionTag) === step.descriptionTag

/** The status with its step tags as `Redaction.serviceText` keeps them: the same status when they are kept whole. */
export const keepStepTags = (status: Transaction.TransactionStatus): Transaction.TransactionStatus =>
  status.steps === undefined || status.steps.every(isKept)
    ? status
    : new Transaction.TransactionStatus({
      ...status,
      steps: status.steps.map((step) =>
        isKept(step)
          ? step
          : new Transaction.Step({ ...step, descriptionTag: Redaction.serviceText(step.descriptionTag) }, {
            disableChecks: true
          })
      )
    }, { disableChecks: true })
