/**
 * The waits of a webhook delivery between failed attempts: exponential
 * (`baseDelay` × 2^(n-1) after the n-th failure), capped at `maxDelay`, with
 * jitter, until `maxAge` has passed since the first attempt; the last wait is
 * cut so that one attempt falls at `maxAge` exactly.
 *
 * The jitter is drawn from the execution id and the attempt's number, not
 * from a random source: a workflow replayed after a restart computes the
 * same waits (a durable clock is named and timed the same), while deliveries
 * of different events or endpoints spread apart.
 */
import * as Duration from "effect/Duration"
import * as Crypto from "node:crypto"

/** The settings of the waits. */
export interface Backoff {
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
  readonly maxAge: Duration.Duration
  /** The share of a wait that the jitter may take off, in [0, 1). */
  readonly jitter: number
}

/** 10 s × 2^n, capped at 1 h, up to 20% shorter, for up to 24 h. */
export const defaults: Backoff = {
  baseDelay: Duration.seconds(10),
  maxDelay: Duration.hours(1),
  maxAge: Duration.hours(24),
  jitter: 0.2
}

/** A number in [0, 1) drawn from the execution id and the attempt's number. */
const unit = (executionId: string, failed: number): number =>
  Crypto.createHash("sha256").update(`${executionId}:${failed}`).digest().readUInt32BE(0) / 2 ** 32

/** The wait after the `failed`-th failed attempt (1, 2, …), in milliseconds, before the cut at `maxAge`. */
export const delayOf = (backoff: Backoff, executionId: string, failed: number): number => {
  const base = Duration.toMillis(backoff.baseDelay)
  const nominal = Math.min(Duration.toMillis(backoff.maxDelay), base * 2 ** Math.min(failed - 1, 52))
  return Math.round(nominal * (1 - backoff.jitter * unit(executionId, failed)))
}

/**
 * The wait before the next attempt after the `failed`-th failed one, made at
 * `lastAt` (epoch ms) when the first was made at `firstAt`; `undefined` once
 * `maxAge` has passed since the first: the delivery is abandoned.
 */
export const next = (
  backoff: Backoff,
  executionId: string,
  failed: number,
  firstAt: number,
  lastAt: number
): number | undefined => {
  const remaining = firstAt + Duration.toMillis(backoff.maxAge) - lastAt
  return remaining <= 0 ? undefined : Math.min(delayOf(backoff, executionId, failed), remaining)
}
