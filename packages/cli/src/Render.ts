/**
 * How `gcx` shows a quote (a batch: `BatchDisplay`, built on the same live line):
 * - `bar`, on a terminal: a live progress bar redrawn in place (carriage
 *   return and erase-line), with the percentage and the steps;
 * - `lines`, on a pipe or a file: one plain line per event;
 * - `json`, with `--json`: one JSON event per line (`QuoteEvent.encode`).
 *
 * Colours follow `NO_COLOR`. Card numbers appear only masked. Every text
 * that comes from the service (ids, tags, codes, messages) goes through
 * `Text.safe`: its control characters are shown escaped, never sent to the
 * terminal. Durations read `229 ms` or `1.2 s`; every `Retrying` event is shown,
 * with the attempt number it carries.
 */
import type * as Errors from "@gcx/core/Errors"
import * as Money from "@gcx/core/Money"
import * as QuoteEvent from "@gcx/core/QuoteEvent"
import * as Transaction from "@gcx/core/Transaction"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stdio from "effect/Stdio"
import * as Terminal from "effect/Terminal"
import * as Ansi from "./Ansi.js"
import * as Text from "./Text.js"

/** How events are shown. */
export type Mode = "bar" | "lines" | "json"

/** `json` when asked for; otherwise `bar` when stdout is a terminal, `lines` when it is not. */
export const mode = (json: boolean): Effect.Effect<Mode, never, Stdio.Stdio> =>
  json
    ? Effect.succeed("json")
    : Effect.flatMap(Stdio.Stdio, (stdio) => stdio.stdoutIsTerminal).pipe(
      Effect.map((isTerminal): Mode => (isTerminal ? "bar" : "lines"))
    )

/** An amount with at least two decimals, never through a float: `100.00`, `92.50`, `0.125` (`Money.format`). */
export const money = Money.format

/** The two values of a completed quote, as one phrase. */
export const values = (event: QuoteEvent.Completed): string =>
  `actual ${money(event.quote.actualCardValue)}  exchange ${money(event.quote.exchangeCardValue)}`

/** The tag and code of an error, as a short phrase: `InvalidCard exchange.invalid.card`. */
export const errorTag = (error: Errors.QuoteFailure): string =>
  Text.safe("errorCode" in error && error.errorCode !== undefined ? `${error._tag} ${error.errorCode}` : error._tag)

/** A duration as people read it: `229 ms` under a second, `1.2 s` from one second (`Text.millis`). */
export const duration = (input: Duration.Input): string => Text.millis(Duration.toMillis(input))

/** The line of a `Retrying` event's attempt: `attempt 2 in 229 ms: ServiceUnavailable`. */
export const retryText = (event: QuoteEvent.Retrying): string =>
  `attempt ${event.attempt} in ${duration(event.delay)}: ${Text.safe(event.reason)}`

const stepState = (step: Transaction.Step): string =>
  step.isCompleted ? "done" : step.startTime !== undefined ? "running" : "waiting"

/** One plain line for an event, as `lines` mode prints it; no control character. */
export const eventLine = (event: QuoteEvent.QuoteEvent): string => Text.safe(rawEventLine(event))

const rawEventLine = (event: QuoteEvent.QuoteEvent): string => {
  const pad = (name: string) => `${name.padEnd(10)} ${event.transactionId}`
  switch (event._tag) {
    case "Submitted":
      return `${pad("submitted")}  card ${event.card ?? "?"}  product ${event.productLineId ?? "?"}${
        event.expectedCompletionTime === undefined ? "" : `  expectedCompletionTime ${event.expectedCompletionTime}`
      }`
    case "Progress":
      return `${pad("progress")}  ${String(event.percentComplete).padStart(3)}%  ${
        event.steps.map((step) => `${step.descriptionTag} ${stepState(step)}`).join(", ")
      }`
    case "StepCompleted":
      return `${pad("step")}  ${event.descriptionTag} completed`
    case "Retrying":
      return `${pad("retrying")}  ${retryText(event)}`
    case "Completed":
      return `${pad("completed")}  ${values(event)}`
    case "Failed":
      return `${pad("failed")}  ${errorTag(event.error)}`
  }
}

/** ANSI "erase in line" (EL 2): clears the whole line, the cursor stays where it is. */
export const eraseLine = "\u001b[2K"

/** A piece of a line, with an optional style. */
export type Segment = readonly [text: string, style?: Ansi.Style]

const noColor: Config.Config<boolean> = Config.String("NO_COLOR").pipe(
  Config.option,
  Config.map(Option.exists((value) => value !== ""))
)

/** A line redrawn in place on the terminal. */
export interface LiveLine {
  /** Replaces the line with what `render` gives for the width available (`Infinity` when unknown). */
  readonly draw: (render: (width: number) => ReadonlyArray<Segment>) => Effect.Effect<void>
  /** Ends the line (once drawn), so that what follows starts on a new line. */
  readonly end: Effect.Effect<void>
}

/**
 * A line redrawn with `\r` and erase-line, cut to the terminal's width; it is
 * ended when the scope closes, interrupted or not.
 */
export const liveLine: Effect.Effect<LiveLine, never, Terminal.Terminal | Scope.Scope> = Effect.gen(function*() {
  const terminal = yield* Terminal.Terminal
  const plain = yield* Effect.orElseSucceed(noColor, () => false)
  const drawn = yield* Ref.make(false)
  const write = (text: string) => Effect.ignore(terminal.display(text))
  const end = Ref.getAndSet(drawn, false).pipe(Effect.flatMap((was) => (was ? write("\n") : Effect.void)))
  yield* Effect.addFinalizer(() => end)
  const draw = (render: (width: number) => ReadonlyArray<Segment>) =>
    Effect.gen(function*() {
      const columns = yield* terminal.columns
      const width = columns > 0 ? columns - 1 : Infinity
      const fitted = fit(
        render(width).map(([text, style]) => style === undefined ? [Text.safe(text)] : [Text.safe(text), style]),
        width
      )
      const text = fitted.map(([text, style]) => (plain || style === undefined ? text : Ansi.paint(text, style)))
        .join("")
      yield* write(`\r${eraseLine}${text}`)
      yield* Ref.set(drawn, true)
    })
  return { draw, end }
})

/** The segments cut to `width` characters. */
const fit = (segments: ReadonlyArray<Segment>, width: number): ReadonlyArray<Segment> => {
  const out: Array<Segment> = []
  let left = width
  for (const [text, style] of segments) {
    if (left <= 0) break
    const piece = text.slice(0, left)
    out.push(style === undefined ? [piece] : [piece, style])
    left -= piece.length
  }
  return out
}

/** The length of the text of some segments. */
const length = (segments: ReadonlyArray<Segment>): number => segments.reduce((sum, [text]) => sum + text.length, 0)

/** A bar of `width` cells filled to `percent`. */
export const bar = (percent: number, width = 20): ReadonlyArray<Segment> => {
  const filled = Math.round((Math.max(0, Math.min(100, percent)) / 100) * width)
  return [["["], ["█".repeat(filled), Ansi.cyan], ["░".repeat(width - filled), Ansi.blackBright], ["]"]]
}

const knownSteps: ReadonlyArray<string> = Object.values(Transaction.StepTags)

interface QuoteState {
  readonly percent: number
  readonly steps: ReadonlyArray<{ readonly tag: string; readonly state: string }>
  readonly note: string
}

const stepSegments = (state: QuoteState): ReadonlyArray<Segment> =>
  state.steps.flatMap(({ state, tag }): ReadonlyArray<Segment> => [
    ["  "],
    state === "done" ? ["✔", Ansi.green] : state === "running" ? ["▸", Ansi.yellow] : ["○", Ansi.blackBright],
    [` ${tag}`]
  ])

/** The bar of a quote, 20 cells wide, or down to 8 so that the steps fit a narrow terminal. */
const quoteSegments = (state: QuoteState) => (width: number): ReadonlyArray<Segment> => {
  const rest: ReadonlyArray<Segment> = [
    [` ${String(state.percent).padStart(3)}%`, Ansi.bold],
    ...stepSegments(state),
    ...(state.note === "" ? [] : [[`  ${state.note}`, Ansi.yellow] as const])
  ]
  return [...bar(state.percent, Math.max(8, Math.min(20, width - length(rest) - 2))), ...rest]
}

/** Shows the events of one quote in a mode; returns what to do with each event. */
export const quote = (
  mode: Mode
): Effect.Effect<(event: QuoteEvent.QuoteEvent) => Effect.Effect<void>, never, Terminal.Terminal | Scope.Scope> => {
  switch (mode) {
    case "json":
      return Effect.succeed((event) => Console.log(Text.json(QuoteEvent.encode(event))))
    case "lines":
      return Effect.succeed((event) => Console.log(eventLine(event)))
    case "bar":
      return quoteBar
  }
}

const quoteBar = Effect.gen(function*() {
  const line = yield* liveLine
  const state = yield* Ref.make<QuoteState>({
    percent: 0,
    steps: knownSteps.map((tag) => ({ tag, state: "waiting" })),
    note: ""
  })
  const redraw = Effect.flatMap(Ref.get(state), (current) => line.draw(quoteSegments(current)))
  return (event: QuoteEvent.QuoteEvent): Effect.Effect<void> => {
    switch (event._tag) {
      case "Submitted":
        return Console.log(Text.safe(
          `quote ${event.card ?? ""} on product ${event.productLineId ?? "?"}: transaction ${event.transactionId}`
        )).pipe(
          Effect.andThen(Ref.update(state, (current) => ({ ...current, percent: event.percentComplete ?? 0 }))),
          Effect.andThen(redraw)
        )
      case "Progress":
        return Ref.update(state, (current) => ({
          ...current,
          percent: event.percentComplete,
          steps: event.steps.length === 0
            ? current.steps
            : event.steps.map((step) => ({ tag: step.descriptionTag, state: stepState(step) })),
          note: ""
        })).pipe(Effect.andThen(redraw))
      case "StepCompleted":
        return Ref.update(state, (current) => ({
          ...current,
          steps: current.steps.map((step) => step.tag === event.descriptionTag ? { ...step, state: "done" } : step)
        })).pipe(Effect.andThen(redraw))
      case "Retrying":
        // every retry stays on screen, one line each, above the bar
        return line.end.pipe(
          Effect.andThen(Console.log(`retrying ${retryText(event)}`)),
          Effect.andThen(
            Ref.update(state, (current) => ({ ...current, note: `retrying: ${Text.safe(event.reason)}` }))
          ),
          Effect.andThen(redraw)
        )
      case "Completed":
        return Ref.update(state, (current) => ({
          percent: 100,
          steps: current.steps.map((step) => ({ ...step, state: "done" })),
          note: ""
        })).pipe(
          Effect.andThen(redraw),
          Effect.andThen(line.end),
          Effect.andThen(Console.log(`✔ completed  ${values(event)}`))
        )
      case "Failed":
        return Ref.update(state, (current) => ({ ...current, note: `✗ ${errorTag(event.error)}` })).pipe(
          Effect.andThen(redraw),
          Effect.andThen(line.end)
        )
    }
  }
})

/** A table of two columns, the numbers aligned right. */
export const table = (rows: ReadonlyArray<readonly [label: string, count: number]>): string => {
  const labelWidth = Math.max(...rows.map(([label]) => label.length))
  const countWidth = Math.max(...rows.map(([, count]) => String(count).length))
  return rows.map(([label, count]) => `  ${label.padEnd(labelWidth)}  ${String(count).padStart(countWidth)}`).join("\n")
}
