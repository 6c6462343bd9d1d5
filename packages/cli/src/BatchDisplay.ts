/**
 * The display of `gcx batch`: one bar for the whole batch on a terminal
 * (`4/10 cards  ✔ 3  ✗ 1`, redrawn in place), or one numbered line per
 * finished card on a pipe (`[3/10] ****0035  failed  ...`).
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import type * as Terminal from "effect/Terminal"
import * as Ansi from "./Ansi.js"
import * as Render from "./Render.js"

/** What a batch display is told as each card finishes. */
export interface BatchDisplay {
  /** A card finished: `ok` when it completed; `line` describes its outcome. */
  readonly finished: (line: string, ok: boolean) => Effect.Effect<void>
}

/**
 * One display for a whole batch of `total` cards: a bar with the count of
 * finished, completed and failed cards, or one line per finished card.
 */
export const make = (
  mode: Exclude<Render.Mode, "json">,
  total: number
): Effect.Effect<BatchDisplay, never, Terminal.Terminal | Scope.Scope> =>
  Effect.gen(function*() {
    const counts = yield* Ref.make({ done: 0, completed: 0, failed: 0 })
    if (mode === "lines") {
      return {
        finished: (line) =>
          Ref.updateAndGet(counts, (c) => ({ ...c, done: c.done + 1 })).pipe(
            Effect.flatMap(({ done }) =>
              Console.log(`[${String(done).padStart(String(total).length)}/${total}] ${line}`)
            )
          )
      }
    }
    const live = yield* Render.liveLine
    const draw = ({ completed, done, failed }: { done: number; completed: number; failed: number }) =>
      live.draw(() => [
        ["batch "],
        ...Render.bar(total === 0 ? 100 : (done / total) * 100),
        [` ${String(total === 0 ? 100 : Math.floor((done / total) * 100)).padStart(3)}%`, Ansi.bold],
        [`  ${done}/${total} cards  `],
        ["✔", Ansi.green],
        [` ${completed}  `],
        ["✗", Ansi.red],
        [` ${failed}`]
      ])
    yield* draw({ done: 0, completed: 0, failed: 0 })
    return {
      finished: (_line, ok) =>
        Ref.updateAndGet(counts, (c) => ({
          done: c.done + 1,
          completed: c.completed + (ok ? 1 : 0),
          failed: c.failed + (ok ? 0 : 1)
        })).pipe(Effect.flatMap(draw))
    }
  })
