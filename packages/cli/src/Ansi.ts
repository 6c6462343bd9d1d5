/**
 * The styles of `gcx`'s own text on a terminal (the progress bar, the help):
 * ANSI SGR sequences, each segment opened with a reset and closed by one
 * (`ESC[0;36m…ESC[0m`), as @effect/printer-ansi wrote them. Nothing here
 * decides whether colours are on: `Output` does (`NO_COLOR`, a terminal).
 */

/** A style: the SGR parameter it sets (`36`, cyan). */
export interface Style {
  readonly sgr: string
}

const style = (sgr: string): Style => ({ sgr })

export const bold: Style = style("1")
export const red: Style = style("31")
export const green: Style = style("32")
export const yellow: Style = style("33")
export const cyan: Style = style("36")
export const blackBright: Style = style("90")

/** `text` in `style`: `ESC[0;<sgr>m` before it, `ESC[0m` after it. */
export const paint = (text: string, style: Style): string => `\u001b[0;${style.sgr}m${text}\u001b[0m`
