import { createHash, timingSafeEqual } from "node:crypto"

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/**
 * Compares two secrets in constant time: both are hashed first, so the
 * comparison neither depends on where they differ nor leaks their lengths.
 */
export const safeEqual = (given: string, expected: string): boolean =>
  timingSafeEqual(digest(given), expectedDigest(expected))

/** The digests of the expected secrets (the configured keys: a handful), computed once each. */
const expectedDigests = new Map<string, Buffer>()

const expectedDigest = (expected: string): Buffer => {
  let known = expectedDigests.get(expected)
  if (known === undefined) {
    known = digest(expected)
    if (expectedDigests.size < 1_000) expectedDigests.set(expected, known)
  }
  return known
}
