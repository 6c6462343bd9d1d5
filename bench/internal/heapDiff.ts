/**
 * Compares two V8 heap snapshots (`v8.writeHeapSnapshot`): the live objects
 * counted by constructor (closures by function name, other nodes by kind),
 * and what grew between the two, largest growth first.
 */
import * as fs from "node:fs"

/** How many live nodes of one constructor or kind a snapshot holds, and their own bytes. */
export interface Count {
  readonly count: number
  readonly selfBytes: number
}

interface Snapshot {
  readonly snapshot: {
    readonly meta: { readonly node_fields: ReadonlyArray<string>; readonly node_types: ReadonlyArray<unknown> }
  }
  readonly nodes: ReadonlyArray<number>
  readonly strings: ReadonlyArray<string>
}

/** The nodes of a snapshot file, counted by `object:<constructor>`, `closure:<name>` or their kind. */
export const counts = (file: string): Map<string, Count> => {
  const snapshot = JSON.parse(fs.readFileSync(file, "utf8")) as Snapshot
  const fields = snapshot.snapshot.meta.node_fields
  const types = snapshot.snapshot.meta.node_types[0] as ReadonlyArray<string>
  const width = fields.length
  const typeAt = fields.indexOf("type")
  const nameAt = fields.indexOf("name")
  const sizeAt = fields.indexOf("self_size")
  const out = new Map<string, Count>()
  for (let index = 0; index < snapshot.nodes.length; index += width) {
    const type = types[snapshot.nodes[index + typeAt]!]!
    const key = type === "object" || type === "closure"
      ? `${type}:${snapshot.strings[snapshot.nodes[index + nameAt]!]}`
      : type
    const previous = out.get(key)
    const size = snapshot.nodes[index + sizeAt]!
    out.set(key, { count: (previous?.count ?? 0) + 1, selfBytes: (previous?.selfBytes ?? 0) + size })
  }
  return out
}

/** One constructor or kind that grew. */
export interface Growth {
  readonly name: string
  readonly before: number
  readonly after: number
  readonly selfBytesAdded: number
}

/** What grew from `before` to `after` by at least `minCount` nodes, largest growth in bytes first. */
export const diff = (before: Map<string, Count>, after: Map<string, Count>, minCount: number): Array<Growth> =>
  [...after].flatMap(([name, { count, selfBytes }]): Array<Growth> => {
    const was = before.get(name) ?? { count: 0, selfBytes: 0 }
    return count - was.count >= minCount
      ? [{ name, before: was.count, after: count, selfBytesAdded: selfBytes - was.selfBytes }]
      : []
  }).sort((a, b) => b.selfBytesAdded - a.selfBytesAdded)
