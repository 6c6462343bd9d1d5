/**
 * What `gcx` prints of text it did not write itself: the service's messages,
 * error codes, transaction ids, step tags, and anything a user typed.
 *
 * - `safe` escapes every control character (C0, DEL, C1) and the Unicode line
 *   and bidirectional-override characters to a visible form (`ESC` becomes
 *   `\x1b`), so that no server can move the cursor, clear the screen, set the
 *   window title or hide text. Every render path goes through it.
 * - `json` is `JSON.stringify` with the characters JSON leaves raw (DEL, C1,
 *   U+2028/9) escaped as `\uXXXX`: the same value, safe on a terminal.
 * - `stripAnsi` removes ANSI escape sequences from gcx's own styled text
 *   (help, colours) when colours are off.
 */

// eslint-disable-next-line no-control-regex
const unsafe = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

const hex = (code: number, digits: number) => code.toString(16).padStart(digits, "0")

/** The visible form of a control character: `\x1b`, `\x07`, `\u202e`. */
const visible = (char: string): string => {
  const code = char.charCodeAt(0)
  return code < 0x100 ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`
}

/** `text` with every control character escaped to a visible form (`ESC` as `\x1b`). */
export const safe = (text: string): string => text.replace(unsafe, visible)

const jsonUnsafe = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/** A value as one line of JSON with no raw control character (JSON escapes C0 already). */
export const json = (value: unknown): string =>
  JSON.stringify(value).replace(jsonUnsafe, (char) => `\\u${hex(char.charCodeAt(0), 4)}`)

// eslint-disable-next-line no-control-regex
const ansi = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g

/** `text` without ANSI escape sequences (CSI, OSC and two-character escapes). */
export const stripAnsi = (text: string): string => text.replace(ansi, "")

/** Milliseconds as people read them: `229 ms` under a second, `1.2 s` from one second, `forever` when infinite. */
export const millis = (value: number): string => {
  if (!Number.isFinite(value)) return "forever"
  if (value < 1000) return `${Math.round(value)} ms`
  const seconds = value / 1000
  return `${seconds < 10 ? seconds.toFixed(1).replace(/\.0$/, "") : Math.round(seconds)} s`
}
