import { createHash, timingSafeEqual } from "node:crypto"

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/** How many digests are remembered (then forgotten all at once), and the longest value remembered. */
const maxDigests = 1_000
const maxRememberedLength = 256

/**
 * The digests of the values compared lately: the configured keys, and the
 * keys that clients send again and again (every exchange call carries its
 * x-api-key), so that a request does not hash the same string anew. A digest
 * says nothing a timing could use: the lookup is by the whole given string.
 */
const digests = new Map<string, Buffer>()

const digestOf = (value: string): Buffer => {
  let known = digests.get(value)
  if (known === undefined) {
    known = digest(value)
    if (value.length <= maxRememberedLength) {
      if (digests.size >= maxDigests) digests.clear()
      digests.set(value, known)
    }
  }
  return known
}

/**
 * Compares two secrets in constant time: both are hashed first, so the
 * comparison neither depends on where they differ nor leaks their lengths.
 */
export const safeEqual = (given: string, expected: string): boolean =>
  timingSafeEqual(digestOf(given), digestOf(expected))
