/**
 * A min-heap of items ordered by a time (when each is due), earliest first;
 * items due at the same time come out in the order they went in.
 */

/** A due queue. */
export interface DueQueue<A> {
  readonly size: () => number
  /** The earliest item, left in place. */
  readonly peek: () => A | undefined
  /** Removes and returns the earliest item. */
  readonly pop: () => A | undefined
  readonly push: (item: A) => void
}

/**
 * An empty due queue ordered by `timeOf`, which is read when an item is pushed
 * and must not change while the item is queued.
 */
export const make = <A>(timeOf: (item: A) => number): DueQueue<A> => {
  // Parallel arrays: the items, their times, and the insertion number of each (the tie-break).
  const items: Array<A> = []
  const times: Array<number> = []
  const orders: Array<number> = []
  let pushed = 0
  const before = (i: number, j: number): boolean =>
    times[i]! < times[j]! || (times[i] === times[j] && orders[i]! < orders[j]!)
  const swap = (i: number, j: number): void => {
    const item = items[i]!
    items[i] = items[j]!
    items[j] = item
    const time = times[i]!
    times[i] = times[j]!
    times[j] = time
    const order = orders[i]!
    orders[i] = orders[j]!
    orders[j] = order
  }
  const up = (start: number): void => {
    let i = start
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(i, parent)) return
      swap(i, parent)
      i = parent
    }
  }
  const down = (start: number): void => {
    let i = start
    while (true) {
      const left = 2 * i + 1
      const right = left + 1
      let first = i
      if (left < items.length && before(left, first)) first = left
      if (right < items.length && before(right, first)) first = right
      if (first === i) return
      swap(i, first)
      i = first
    }
  }
  return {
    size: () => items.length,
    peek: () => items[0],
    pop: () => {
      if (items.length === 0) return undefined
      const first = items[0]!
      const lastItem = items.pop()!
      const lastTime = times.pop()!
      const lastOrder = orders.pop()!
      if (items.length > 0) {
        items[0] = lastItem
        times[0] = lastTime
        orders[0] = lastOrder
        down(0)
      }
      return first
    },
    push: (item) => {
      items.push(item)
      times.push(timeOf(item))
      orders.push(pushed++)
      up(items.length - 1)
    }
  }
}
