/**
 * The prepared statements of one SQLite connection, by SQL text: a bounded
 * least-recently-used cache. Synchronous (the connection is used by one fiber
 * at a time, behind the client's semaphore), so a hit costs a `Map` lookup and
 * a re-insertion, and no effect.
 *
 * An evicted statement is dropped, not finalized: `node:sqlite` has no
 * `finalize`; the garbage collector finalizes it, and closing the database
 * finalizes every statement still alive.
 */

/** How the cache is used: for diagnostics and tests. */
export interface Stats {
  /** Statements held now (at most `capacity`). */
  readonly size: number
  /** The most statements held. */
  readonly capacity: number
  /** Statements found in the cache. */
  readonly hits: number
  /** Statements prepared (not in the cache, or evicted). */
  readonly misses: number
  /** Statements dropped to make room. */
  readonly evictions: number
}

/** A cache of what `prepare` makes, keyed by SQL text. */
export interface StatementCache<S> {
  /** The statement for `sql`: the cached one, or a new one from `prepare` (which may throw: nothing is cached then). */
  readonly get: (sql: string) => S
  readonly stats: () => Stats
  /** Forgets every statement (the database is closing). */
  readonly clear: () => void
}

/** A cache of at most `capacity` statements (0: none is kept, every `get` prepares). */
export const make = <S>(capacity: number, prepare: (sql: string) => S): StatementCache<S> => {
  const bound = Math.max(0, Math.floor(capacity))
  // a Map iterates in insertion order: its first key is the least recently used
  const entries = new Map<string, S>()
  let hits = 0
  let misses = 0
  let evictions = 0
  return {
    get(sql) {
      const cached = entries.get(sql)
      if (cached !== undefined) {
        hits++
        entries.delete(sql)
        entries.set(sql, cached)
        return cached
      }
      misses++
      const statement = prepare(sql)
      if (bound === 0) return statement
      if (entries.size >= bound) {
        entries.delete(entries.keys().next().value!)
        evictions++
      }
      entries.set(sql, statement)
      return statement
    },
    stats: () => ({ size: entries.size, capacity: bound, hits, misses, evictions }),
    clear: () => entries.clear()
  }
}
