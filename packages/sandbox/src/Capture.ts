/**
 * Everything a program lets out, captured for secret-hygiene tests: every log
 * line (message, level, annotations, spans, cause) and every span (name,
 * attributes, events, links, and how it ended). Plant sentinel secrets and card
 * data, run the program with `layer`, then `scan` for them.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Formatter from "effect/Formatter"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"

/** What a run let out. */
export interface Capture {
  readonly lines: Array<string>
  readonly spans: Array<Tracer.Span>
}

/** An empty capture. */
export const make = (): Capture => ({ lines: [], spans: [] })

/** Any value as text, as a log or an exporter would render it. */
export const show = (value: unknown): string => {
  try {
    return Formatter.format(value)
  } catch {
    return String(value)
  }
}

/** An exit as a trace exporter sees it: "success" (values are never exported) or the rendered failure. */
export const showExit = (exit: Exit.Exit<unknown, unknown>): string =>
  Exit.match(exit, {
    onFailure: (cause) => Cause.pretty(cause),
    onSuccess: () => "success"
  })

/** A span as text: name, attributes, events, links and its end. */
export const showSpan = (span: Tracer.Span): string => {
  // The native span keeps its events in `_events`.
  const native = span as Tracer.Span & {
    readonly _events?: ReadonlyArray<readonly [string, bigint, Record<string, unknown>]> | undefined
  }
  return [
    span.name,
    show(Object.fromEntries(span.attributes)),
    show((native._events ?? []).map(([name, , attributes]) => [name, attributes])),
    show(span.links.map((link) => link.attributes)),
    span.status._tag === "Ended" ? showExit(span.status.exit) : "running"
  ].join(" | ")
}

/** A logger that records every log line, at every level. */
export const logs = (capture: Capture): Layer.Layer<never> =>
  Logger.layer([
    Logger.make(({ cause, fiber, logLevel, message }) => {
      capture.lines.push(
        [
          logLevel,
          show(message),
          show(fiber.getRef(References.CurrentLogAnnotations)),
          fiber.getRef(References.CurrentLogSpans).map(([label]) => label).join(","),
          cause.reasons.length === 0 ? "" : Cause.pretty(cause)
        ].join(" | ")
      )
    })
  ]).pipe(Layer.merge(Layer.succeed(References.MinimumLogLevel, "All")))

/** A tracer that keeps every span (the native ones, so that they also record their events and exit). */
export const spans = (capture: Capture): Layer.Layer<never> =>
  Layer.unwrap(Effect.map(Effect.tracer, (native) =>
    Layer.succeed(Tracer.Tracer, {
      ...native,
      span(options) {
        const span = native.span(options)
        capture.spans.push(span)
        return span
      }
    })))

/** Both: every log line and every span. */
export const layer = (capture: Capture): Layer.Layer<never> => Layer.merge(logs(capture), spans(capture))

/** Everything captured, as one text. */
export const text = (capture: Capture): string => [...capture.lines, ...capture.spans.map(showSpan)].join("\n")

/** The sentinels that occur in `haystack`: empty when nothing leaked. */
export const scan = (haystack: string, sentinels: ReadonlyArray<string>): ReadonlyArray<string> =>
  sentinels.filter((sentinel) => sentinel.length > 0 && haystack.includes(sentinel))
