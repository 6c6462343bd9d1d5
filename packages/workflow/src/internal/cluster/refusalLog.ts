/**
 * Warnings of the cluster connections that fail their TLS handshake, at most one a minute per peer
 * (and 20 a minute in all):
 * what tells an operator that a node is not the cluster's (another CA's certificate, plain TCP, a
 * certificate that does not verify), on both sides. The runner that refuses a connection names the
 * peer's address; the node whose connection to a runner is refused names that runner. The reason is
 * Node's code (`ERR_SSL_TLSV1_ALERT_UNKNOWN_CA`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`, ...), never a
 * certificate's content.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** How long the warnings of one peer stay quiet after one. */
const quietMillis = 60_000

/** The most peers remembered; past it, all are forgotten (a flood of addresses costs memory no more). */
const maxPeers = 1000

/** The most warnings a minute, all peers together: a scan from many addresses is not a flood of lines. */
const maxPerMinute = 20

/** The code of a failure to set up TLS, in the error or its causes (at most 3 deep); undefined for another failure. */
export const tlsCodeOf = (error: unknown): string | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { readonly code?: unknown }).code
    if (typeof code === "string" && /^(?:ERR_SSL|ERR_TLS|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code)) {
      return code
    }
    const next = current as { readonly reason?: unknown; readonly cause?: unknown }
    current = next.reason ?? next.cause
  }
  return undefined
}

/** A log of refusals, running its warnings with `context` (the node's logger). */
export interface RefusalLog {
  /** A connection from `peer` refused in its handshake (`code`, when Node gave one). */
  readonly refused: (peer: string | undefined, code: string | undefined) => void
  /** The runner at `runner` refused this node's connection, or its certificate did not verify (`code`). */
  readonly unauthenticated: (runner: string, code: string) => Effect.Effect<void>
}

/** A refusal log over the services of `context`. */
export const make = (context: Context.Context<never>): RefusalLog => {
  const last = new Map<string, number>()
  const minute = { start: 0, count: 0 }
  /** Whether `peer` may be warned of now (and, if so, notes it). */
  const due = (peer: string): boolean => {
    const now = Date.now()
    const at = last.get(peer)
    if (at !== undefined && now - at < quietMillis) return false
    if (now - minute.start >= quietMillis) {
      minute.start = now
      minute.count = 0
    }
    if (minute.count >= maxPerMinute) return false
    minute.count++
    if (last.size >= maxPeers) last.clear()
    last.set(peer, now)
    return true
  }
  return {
    refused: (peer, code) => {
      const from = peer ?? "an unknown address"
      if (!due(`in ${from}`)) return
      Effect.runForkWith(context)(
        Effect.logWarning(
          `refused a cluster connection from ${from}: its TLS handshake failed (${code ?? "no reason given"}); ` +
            "a node without a certificate of the cluster's CA (GCX_RUNNER_TLS_*) cannot join"
        )
      )
    },
    unauthenticated: (runner, code) =>
      Effect.suspend(() =>
        due(`out ${runner}`)
          ? Effect.logWarning(
            `cannot authenticate the runner at ${runner} (${code}): this node's certificates or that runner's are ` +
              "not the cluster's (GCX_RUNNER_TLS_*)"
          )
          : Effect.void
      )
  }
}
