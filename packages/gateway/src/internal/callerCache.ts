/**
 * What `ApiKeys.authenticate` remembers, by a key's hash, for `ttl`
 * milliseconds: the callers it found (at most `callerCapacity`), and, apart,
 * the well-formed keys it did not find (at most `unknownCapacity`, so a flood
 * of random keys never pushes a caller out). Past a capacity, the oldest
 * entry is forgotten. A revocation forgets its key at once, and a lookup that
 * a revocation overtook remembers nothing (it may have read the key before).
 */

/** The callers remembered at most. */
const callerCapacity = 10_000

/** The unknown keys remembered at most. */
const unknownCapacity = 1_000

/** Sets `key` in `map`, forgetting its oldest entry first when `map` holds `capacity`. */
const remember = <V>(map: Map<string, V>, capacity: number, key: string, value: V): void => {
  map.delete(key)
  if (map.size >= capacity) map.delete(map.keys().next().value!)
  map.set(key, value)
}

/** A cache of callers `A` for `ttl` milliseconds (0 remembers none). */
export const make = <A>(ttl: number) => {
  const callers = new Map<string, { readonly caller: A; readonly expires: number }>()
  const unknown = new Map<string, number>()
  let revocations = 0
  return {
    /** The caller of `hash` at `now`; `null` while it is remembered as unknown; `undefined` to look it up. */
    get: (hash: string, now: number): A | null | undefined => {
      const known = callers.get(hash)
      if (known !== undefined && known.expires > now) return known.caller
      return (unknown.get(hash) ?? 0) > now ? null : undefined
    },
    /** A mark to take before a lookup, for `set`: it changes with every revocation. */
    mark: (): number => revocations,
    /** Remembers what a lookup of `hash` taken at `mark` found at `now`, unless a revocation overtook it. */
    set: (hash: string, caller: A | undefined, now: number, mark: number): void => {
      callers.delete(hash)
      unknown.delete(hash)
      if (ttl <= 0 || mark !== revocations) return
      if (caller === undefined) remember(unknown, unknownCapacity, hash, now + ttl)
      else remember(callers, callerCapacity, hash, { caller, expires: now + ttl })
    },
    /** A key just made: never remembered as unknown. */
    made: (hash: string): void => {
      unknown.delete(hash)
    },
    /** A revocation: the keys of `hashes` are forgotten, and the lookups in flight remember nothing. */
    revoked: (hashes: ReadonlyArray<string>): void => {
      revocations++
      for (const hash of hashes) callers.delete(hash)
    }
  }
}
