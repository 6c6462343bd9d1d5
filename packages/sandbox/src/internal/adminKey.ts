/**
 * The admin key of a sandbox: there is no well-known one. It is the key
 * given, else 24 random bytes (base64url) drawn at each start; an interface
 * other machines can reach needs a key given.
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import * as Hosts from "./hosts.js"

/** The variable that sets the admin key of `pnpm sandbox` and `gcx sandbox`. */
export const variable = "GCX_SANDBOX_ADMIN_KEY"

/** The admin key of a sandbox listening on `host`, or what is wrong with the options. */
export const resolve = (
  host: string,
  given: string | Redacted.Redacted<string> | undefined
): Effect.Effect<string, string> => {
  if (given !== undefined) {
    const key = Redacted.isRedacted(given) ? Redacted.value(given) : given
    return key.trim() === ""
      ? Effect.fail("the admin key is empty: give a key, or none for a random one")
      : Effect.succeed(key)
  }
  return Hosts.isLoopback(host)
    ? Effect.sync(() => randomBytes(24).toString("base64url"))
    : Effect.fail(
      `${host} is not a loopback address: other machines could reach the sandbox there, so it needs ` +
        `an admin key of your own (--admin-key, ${variable} or the adminKey option)`
    )
}
