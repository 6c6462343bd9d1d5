import { createHash, timingSafeEqual } from "node:crypto"

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/**
 * Compares two secrets in constant time: both are hashed first, so the
 * comparison neither depends on where they differ nor leaks their lengths.
 */
export const safeEqual = (given: string, expected: string): boolean => timingSafeEqual(digest(given), digest(expected))
