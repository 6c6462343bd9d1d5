/**
 * A keyed fingerprint of a card: HMAC-SHA-256 over a canonical encoding of
 * its number, PIN and product line, under a key of its own. It tells whether
 * two cards are the same (a requestId belongs to one card), and reveals
 * nothing of them to whoever lacks the key: no dictionary of card numbers can
 * be run against it. The fingerprint is kept with a quote; the card never is.
 *
 * - `random()`: a key drawn for this process, for a record that lives as long
 *   as the process (the in-process poller's requestIds).
 * - `derive(dataKey)`: a key derived with HKDF-SHA-256 (its own `info`
 *   label) from a deployment's data key, so that every node of the
 *   deployment computes the same fingerprints (durable quotes). A fingerprint
 *   carries the id of the key it was made with: after a key rotation, an
 *   older fingerprint is compared under the key that made it.
 *
 * Synchronous, on `node:crypto` (`effect/crypto` has no synchronous HMAC).
 */
import type * as Card from "@gcx/core/Card"
import * as Redacted from "effect/Redacted"
import * as Crypto from "node:crypto"

/** A keyed card fingerprint function. */
export interface CardFingerprint {
  /** The id of the key, which names it and reveals nothing of it (e.g. the data key's id). */
  readonly keyId: string
  /** The fingerprint of a validated card: 64 hex digits. */
  readonly of: (card: Card.Card) => string
}

/** The HKDF `info` of the fingerprint key derived from a data key: no other key derived from it is the same. */
export const derivationLabel = "gcx card fingerprint key v1"

/** How many bytes a fingerprint key has. */
export const keyBytes = 32

/** The canonical encoding of a card: its three fields as a JSON array (unambiguous, whatever they hold). */
const canonical = (card: Card.Card): string =>
  JSON.stringify([Redacted.value(card.cardNumber), Redacted.value(card.pinNumber), card.productLineId])

/** The fingerprint function of `key`, named `keyId`. */
export const make = (key: Redacted.Redacted<Uint8Array>, keyId: string): CardFingerprint => {
  // a KeyObject, made once: `createHmac` prepares raw key bytes anew on every call (about 8 µs here)
  const secret = Crypto.createSecretKey(Redacted.value(key))
  return {
    keyId,
    of: (card) => Crypto.createHmac("sha256", secret).update(canonical(card), "utf8").digest("hex")
  }
}

/** A fingerprint function under a key drawn for this process alone (its id is `process`). */
export const random = (): CardFingerprint =>
  make(Redacted.make(new Uint8Array(Crypto.randomBytes(keyBytes)), { label: "CardFingerprintKey" }), "process")

/**
 * The fingerprint function of a deployment: its key derived with HKDF-SHA-256
 * from the data key (`derivationLabel` as `info`), named by the data key's id.
 */
export const derive = (dataKey: Redacted.Redacted<Uint8Array>, keyId: string): CardFingerprint =>
  make(deriveKey(dataKey, derivationLabel, "CardFingerprintKey"), keyId)

/**
 * A key of `keyBytes` derived from a data key with HKDF-SHA-256 (no salt,
 * `info` = `label`): each label gives a key of its own, and none reveals the
 * data key or another label's key (the card fingerprints', the gateway's
 * request ids'). `redactedLabel` names it where it would be shown.
 */
export const deriveKey = (
  dataKey: Redacted.Redacted<Uint8Array>,
  label: string,
  redactedLabel: string
): Redacted.Redacted<Uint8Array> =>
  Redacted.make(
    new Uint8Array(Crypto.hkdfSync("sha256", Redacted.value(dataKey), new Uint8Array(0), label, keyBytes)),
    { label: redactedLabel }
  )

/** Whether two fingerprints are the same, in a time that does not depend on where they differ. */
export const equals = (a: string, b: string): boolean =>
  a.length === b.length && Crypto.timingSafeEqual(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))
