/**
 * Flushes and shutdowns that never reject. `@effect/opentelemetry` 4.1 flushes
 * the tracer provider and shuts the metric readers down with `Effect.promise`,
 * which turns a rejection into a defect, and `Effect.ignore` does not catch
 * defects: with a collector that is down, refuses or is slow, the layer's
 * release would die with the exporter's error. So the span processor and the
 * metric readers are given a `forceFlush` and a `shutdown` that report a
 * failure (`Failures.flushFailed`) instead of rejecting, and that give up
 * after `timeoutMillis` (the layer's `shutdownTimeout`).
 */
import type * as ExportFailures from "./exportFailures.js"

/**
 * `operation()` settled: resolves when it does, when it rejects, or after
 * `timeoutMillis` at the latest (the operation goes on unwaited for); a
 * rejection or the timeout is reported, once, to `onFailure`.
 */
export const settle = (
  operation: () => Promise<unknown>,
  timeoutMillis: number,
  onFailure: (reason: unknown) => void
): Promise<void> =>
  new Promise<void>((resolve) => {
    let done = false
    const end = (failure?: { readonly reason: unknown }) => {
      if (done) return
      done = true
      clearTimeout(timer)
      if (failure !== undefined) onFailure(failure.reason)
      resolve()
    }
    const timer = setTimeout(
      () => end({ reason: `gave up after ${timeoutMillis} ms` }),
      Math.max(0, timeoutMillis)
    )
    timer.unref()
    // a synchronous throw rejects as well
    new Promise<unknown>((run) => run(operation())).then(() => end(), (reason: unknown) => end({ reason }))
  })

/** A span processor, a metric reader: what can be flushed and shut down. */
interface Flushable {
  forceFlush(...args: Array<any>): Promise<void>
  shutdown(...args: Array<any>): Promise<void>
}

/**
 * Makes `target`'s `forceFlush` and `shutdown` settle (`settle`): they never
 * reject, end within `timeoutMillis`, and report their failures to
 * `failures`. The object itself is changed, not wrapped, as a metric reader
 * must stay the same instance (the SDK and the Prometheus exporter call its
 * other methods).
 */
export const settleFlushes = <T extends Flushable>(
  target: T,
  failures: ExportFailures.Failures,
  timeoutMillis: number
): T => {
  const forceFlush = target.forceFlush.bind(target)
  const shutdown = target.shutdown.bind(target)
  target.forceFlush = (...args) => settle(() => forceFlush(...args), timeoutMillis, failures.flushFailed)
  target.shutdown = (...args) => settle(() => shutdown(...args), timeoutMillis, failures.flushFailed)
  return target
}
