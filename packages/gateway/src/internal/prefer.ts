/**
 * The `Prefer` request header (RFC 7240) of `POST /v1/quotes`: its `wait`
 * preference, how many seconds the caller would wait for the quote's
 * outcome in the POST's own answer. Other preferences are ignored, as the RFC
 * asks; of several `wait`s, the first counts. A `wait` that is not a whole
 * number of seconds is refused (400): it is the caller's mistake, and
 * ignoring it would answer at once when the caller meant to wait.
 */
import * as Result from "effect/Result"

/** The longest wait the gateway grants (longer ones are granted this much): less than common proxies' 60 s. */
export const maxWaitSeconds = 30

/** The wait granted for `digits` seconds asked. */
const granted = (digits: string) => Math.min(Number(digits), maxWaitSeconds)

/** The `wait` preference granted, in whole seconds (0: none asked), or why the header is refused. */
export const parseWait = (header: string | undefined): Result.Result<number, string> => {
  if (header === undefined) return Result.succeed(0)
  // the common header, `wait=N` alone, without the general parse
  const plain = /^wait=(\d{1,9})$/.exec(header)
  if (plain !== null) return Result.succeed(granted(plain[1]!))
  for (const preference of header.split(",")) {
    // `token [= word] *(; parameter)`: the parameters of a preference are not wait's
    const [name, ...value] = preference.split(";", 1)[0]!.split("=")
    if (name!.trim().toLowerCase() !== "wait") continue
    const seconds = value.join("=").trim().replace(/^"(.*)"$/, "$1")
    if (!/^\d{1,9}$/.test(seconds)) return Result.fail("Prefer: wait must be a whole number of seconds, e.g. wait=10")
    return Result.succeed(granted(seconds))
  }
  return Result.succeed(0)
}

/** The `Preference-Applied` header of a granted wait. */
export const applied = (seconds: number): string => `wait=${seconds}`
