/**
 * The `Prefer` request header (RFC 7240) of `POST /v1/quotes`: its `wait`
 * preference, how many seconds the caller would wait for the quote's
 * outcome in the POST's own answer. Other preferences are ignored, as the RFC
 * asks, and so are commas and semicolons inside quoted values (a quote left
 * open is refused, 400); of several `wait`s, the first counts. A `wait` that is not a whole number of seconds
 * (or has no value) is refused (400), where the RFC would let it be ignored:
 * it is the caller's mistake, and ignoring it would answer at once, without a
 * word, when the caller meant to wait.
 */
import * as Result from "effect/Result"

/** The longest wait the gateway grants (longer ones are granted this much): less than common proxies' 60 s. */
export const maxWaitSeconds = 30

/** The wait granted for `digits` seconds asked (however many digits: `Number` of a long one is past the cap). */
const granted = (digits: string) => Math.min(Number(digits), maxWaitSeconds)

/**
 * The elements of a header list split at `separator`, but not inside a quoted string (RFC 9110
 * §5.6); `undefined` when a quoted string is not closed.
 */
const splitOutsideQuotes = (text: string, separator: string): Array<string> | undefined => {
  const parts: Array<string> = []
  let quoted = false
  let from = 0
  for (let at = 0; at < text.length; at++) {
    const char = text[at]
    if (char === "\\" && quoted) at++
    else if (char === "\"") quoted = !quoted
    else if (char === separator && !quoted) {
      parts.push(text.slice(from, at))
      from = at + 1
    }
  }
  parts.push(text.slice(from))
  return quoted ? undefined : parts
}

/** A `word` (RFC 9110 §5.6): a token, or a quoted string without its quotes and escapes. */
const unquoted = (word: string): string =>
  word.length >= 2 && word.startsWith("\"") && word.endsWith("\"") ? word.slice(1, -1).replace(/\\(.)/g, "$1") : word

/** The `wait` preference granted, in whole seconds (0: none asked), or why the header is refused. */
export const parseWait = (header: string | undefined): Result.Result<number, string> => {
  if (header === undefined) return Result.succeed(0)
  // the common header, `wait=N` alone, without the general parse
  const plain = /^wait=(\d+)$/.exec(header)
  if (plain !== null) return Result.succeed(granted(plain[1]!))
  const preferences = splitOutsideQuotes(header, ",")
  // a quote left open hides where each preference ends: a wait in it would go unseen
  if (preferences === undefined) return Result.fail("Prefer: a quoted value is not closed")
  for (const preference of preferences) {
    // `token [= word] *(; parameter)`: the parameters of a preference are not wait's
    const token = splitOutsideQuotes(preference, ";")![0]!
    const equals = token.indexOf("=")
    const name = equals < 0 ? token : token.slice(0, equals)
    if (name.trim().toLowerCase() !== "wait") continue
    const seconds = equals < 0 ? "" : unquoted(token.slice(equals + 1).trim())
    if (!/^\d+$/.test(seconds)) return Result.fail("Prefer: wait must be a whole number of seconds, e.g. wait=10")
    return Result.succeed(granted(seconds))
  }
  return Result.succeed(0)
}

/** The `Preference-Applied` header of a granted wait. */
export const applied = (seconds: number): string => `wait=${seconds}`
