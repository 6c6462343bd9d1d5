/**
 * The requestIds a poller was given, each with the fingerprint of its card
 * (`CardFingerprint`, under a key of this process) and the POST attempts sent
 * under it: a requestId reused with another card is `RequestIdConflict`
 * before any I/O; reused with the same card, it is POSTed again with
 * `previousAttempts` counted on, so that the service answers the original
 * transaction (the same quote). Per poller, in memory: the most recent
 * `capacity` requestIds are remembered, the oldest forgotten first.
 */
import type * as Card from "@gcx/core/Card"
import { RequestIdConflict } from "@gcx/core/Errors"
import * as Result from "effect/Result"
import * as CardFingerprint from "../CardFingerprint.js"

/** The record of a poller's requestIds. */
export interface RequestIds {
  /**
   * Claims `requestId` for `card`: the `previousAttempts` of its next POST
   * (0 the first time, never below `atLeast`: the attempts the caller knows
   * were made, by an earlier process say), or `RequestIdConflict` when it was
   * given another card. The attempt is counted at once.
   */
  readonly claim: (requestId: string, card: Card.Card, atLeast?: number) => Result.Result<number, RequestIdConflict>
  /** Counts one more attempt of `requestId` (a retry of its POST). */
  readonly retried: (requestId: string) => void
}

interface Entry {
  readonly fingerprint: string
  attempts: number
}

/** A record of at most `capacity` requestIds, whose cards are fingerprinted by `fingerprint`. */
export const make = (
  capacity: number,
  fingerprint: CardFingerprint.CardFingerprint = CardFingerprint.random()
): RequestIds => {
  const entries = new Map<string, Entry>()
  return {
    claim: (requestId, card, atLeast = 0) => {
      const print = fingerprint.of(card)
      const entry = entries.get(requestId)
      if (entry === undefined) {
        // a Map iterates in insertion order: the first key is the oldest
        if (entries.size >= capacity) entries.delete(entries.keys().next().value!)
        entries.set(requestId, { fingerprint: print, attempts: atLeast + 1 })
        return Result.succeed(atLeast)
      }
      if (!CardFingerprint.equals(entry.fingerprint, print)) return Result.fail(new RequestIdConflict({ requestId }))
      const attempt = Math.max(entry.attempts, atLeast)
      entry.attempts = attempt + 1
      return Result.succeed(attempt)
    },
    retried: (requestId) => {
      const entry = entries.get(requestId)
      if (entry !== undefined) entry.attempts++
    }
  }
}
