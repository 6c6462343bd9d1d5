/**
 * Why the service could not be reached: when a request got no answer at all
 * (a `TransportError`, or a `TokenError` with no HTTP status), `gcx` names the
 * host it tried and the cause, found by opening a TCP connection to it
 * (`ECONNREFUSED 127.0.0.1:9`, `ENOTFOUND gcx.invalid`), whatever the HTTP
 * client said or hid (fetch refuses some ports without a system error).
 */
import type * as Errors from "@gcx/core/Errors"
import * as ExchangeConfig from "@gcx/http/ExchangeConfig"
import * as Effect from "effect/Effect"
import * as Net from "node:net"
import * as ExitCode from "./ExitCode.js"

/** The host and port of a URL, with the scheme's default port. */
export const hostOf = (url: string): { readonly host: string; readonly port: number } | undefined => {
  try {
    const parsed = new URL(url)
    const port = parsed.port === "" ? (parsed.protocol === "https:" ? 443 : 80) : Number(parsed.port)
    return { host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port }
  } catch {
    return undefined
  }
}

/** What a TCP connection to `host:port` meets, in a few words: `ECONNREFUSED 127.0.0.1:9`. */
export const probe = (host: string, port: number, timeoutMillis = 3000): Effect.Effect<string> =>
  Effect.callback<string>((resume) => {
    const socket = Net.connect({ host, port })
    const done = (text: string) => {
      socket.destroy()
      resume(Effect.succeed(text))
    }
    socket.setTimeout(timeoutMillis, () => done(`no TCP answer from ${host}:${port} in ${timeoutMillis} ms`))
    socket.once("connect", () => done(`${host}:${port} accepts TCP connections`))
    socket.once(
      "error",
      (error: NodeJS.ErrnoException & { address?: string; port?: number }) =>
        done(
          `${error.code ?? error.name} ${error.address ?? host}${
            error.address === undefined ? `:${port}` : `:${error.port ?? port}`
          }`
        )
    )
    return Effect.sync(() => socket.destroy())
  })

const noAnswer = (error: unknown): error is Errors.TransportError | Errors.TokenError =>
  typeof error === "object" && error !== null && "_tag" in error &&
  (error._tag === "TransportError" ||
    (error._tag === "TokenError" && (error as Errors.TokenError).httpStatus === undefined))

/**
 * Turns a failure that got no answer into one line naming the host and the
 * cause (same exit code), then `hint`'s text for the error, if any; other
 * failures pass as they are.
 */
export const explain = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  hint: (error: Errors.TransportError | Errors.TokenError) => string = () => ""
): Effect.Effect<A, E | ExitCode.CliError, R | ExchangeConfig.ExchangeConfig> =>
  Effect.catchIf(
    effect,
    (error): error is E & (Errors.TransportError | Errors.TokenError) => noAnswer(error),
    (error) =>
      Effect.gen(function*() {
        const config = yield* ExchangeConfig.ExchangeConfig
        const target = hostOf(error._tag === "TokenError" ? config.authUrl : config.baseUrl)
        const cause = target === undefined ? "an invalid URL" : yield* probe(target.host, target.port)
        const host = target === undefined ? "?" : `${target.host}:${target.port}`
        return yield* new ExitCode.CliError({
          code: ExitCode.ofQuoteFailure(error),
          message: `${ExitCode.describeQuoteFailure(error)}; host ${host}: ${cause}${hint(error)}`
        })
      })
  )
