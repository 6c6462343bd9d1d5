/**
 * Failed exports. A collector that is down, refuses or is slow never fails
 * the application: each failed export is dropped, counted in
 * `gcx.telemetry.exports.failed{signal}`, and the first failure of each signal
 * is logged as a warning. Only the failure's message is logged (an
 * `OTLPExporterError` also carries the collector's answer, which is not).
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Metrics from "../../Metrics.js"

/** The signals exported. */
export type Signal = "traces" | "metrics"

/** The family of `gcx.telemetry.exports.failed`. */
export const exportsFailedFamily: Metrics.Family<Metric.Counter<number>> = (attributes) =>
  Metric.counter("gcx.telemetry.exports.failed", {
    description: "OTLP exports that failed; their data was dropped",
    incremental: true,
    attributes
  })

/** Exports that failed (the collector was down, slow or refused them): their data is dropped. */
export const exportsFailed: Metric.Counter<number> = exportsFailedFamily({})

/** Where the failures of one signal's exports are reported, for one telemetry layer. */
export interface Failures {
  readonly signal: Signal
  /** An export failed: counted; logged if it is the signal's first failure. */
  readonly exportFailed: (reason: unknown) => void
  /**
   * A flush or shutdown failed or gave up: logged if it is the signal's first
   * failure, not counted (each export it dropped reports its own failure).
   */
  readonly flushFailed: (reason: unknown) => void
}

const maxReasonLength = 200

/**
 * What a failure says, short: the message of an error (of each, for several),
 * on one line, cut to 200 characters; never anything else it carries.
 */
export const describeReason = (reason: unknown): string => {
  const text = Array.isArray(reason)
    ? reason.map(describeReason).join("; ")
    : reason instanceof Error
    ? (reason.message.split("\n", 1)[0]?.trim() || reason.name)
    : typeof reason === "string"
    ? reason
    : "unknown"
  return text.length > maxReasonLength ? `${text.slice(0, maxReasonLength - 1)}…` : text
}

/** The failures of `signal`, counted and logged through the application's metrics and logger (run with `context`). */
export const make = (signal: Signal, context: Context.Context<never>): Failures => {
  const failed = Metrics.labelled(exportsFailedFamily, { signal })
  const run = Effect.runForkWith(context)
  let logged = false
  const warnOnce = (reason: unknown): Effect.Effect<void> => {
    if (logged) return Effect.void
    logged = true
    return Effect.logWarning(
      `telemetry: a ${signal} export failed; failed exports are dropped and counted in gcx.telemetry.exports.failed`
    ).pipe(Effect.annotateLogs({ signal, reason: describeReason(reason) }))
  }
  return {
    signal,
    exportFailed: (reason) => {
      run(Effect.andThen(Metrics.update(failed, 1), warnOnce(reason)))
    },
    flushFailed: (reason) => {
      if (!logged) run(warnOnce(reason))
    }
  }
}

/** What an OTLP exporter reports of one export (`@opentelemetry/core`'s `ExportResult`; code 0 is success). */
interface ExportResult {
  readonly code: number
  readonly error?: Error | undefined
}

interface Exporter<Items> {
  export(items: Items, resultCallback: (result: ExportResult) => void): void
}

/** Makes `exporter` report each failed export to `failures` (counted; the first one logged). */
export const guard = <E extends Exporter<any>>(exporter: E, failures: Failures): E => {
  const original = exporter.export.bind(exporter)
  exporter.export = (items, resultCallback) =>
    original(items, (result) => {
      if (result.code !== 0) failures.exportFailed(result.error)
      resultCallback(result)
    })
  return exporter
}
