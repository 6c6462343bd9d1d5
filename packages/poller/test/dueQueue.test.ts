import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as DueQueue from "../src/internal/dueQueue.js"

describe("DueQueue", () => {
  it("pops the earliest first, and items due together in the order they were pushed", () => {
    const queue = DueQueue.make((item: { readonly due: number; readonly name: string }) => item.due)
    for (const [due, name] of [[5, "e"], [1, "a"], [3, "c1"], [3, "c2"], [0, "z"], [3, "c3"]] as const) {
      queue.push({ due, name })
    }
    expect(queue.peek()?.name).toBe("z")
    const names: Array<string> = []
    while (queue.size() > 0) names.push(queue.pop()!.name)
    expect(names).toEqual(["z", "a", "c1", "c2", "c3", "e"])
    expect(queue.pop()).toBeUndefined()
  })

  it("agrees with a stable sort under any mix of pushes and pops", () =>
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }), {
          maxLength: 200
        }),
        (operations) => {
          const queue = DueQueue.make((item: { readonly due: number; readonly order: number }) => item.due)
          let model: Array<{ readonly due: number; readonly order: number }> = []
          operations.forEach((due, order) => {
            if (due === undefined) {
              const expected = model[0]
              model = model.slice(1)
              expect(queue.pop()).toEqual(expected)
            } else {
              queue.push({ due, order })
              model = [...model, { due, order }].sort((a, b) => a.due - b.due || a.order - b.order)
            }
            expect(queue.size()).toBe(model.length)
          })
        }
      )
    ))
})
