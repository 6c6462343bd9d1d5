/**
 * The connection flags shared by `heartbeat`, `quote`, `watch`, `batch` and
 * `runner`, each standing for a `GCX_*` variable (see `Connection`). Kept apart
 * from `Connection` so that `gcx` defines its commands without loading the
 * client (`Lazy`).
 */
import type * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flag from "./Flag.js"

const text = (name: string, pseudoName: string, variable: string, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName(pseudoName),
    Options.withDescription(`${description} (${variable})`),
    Options.optional
  )

/** The connection flags. */
export const options = {
  env: Flag.choice("env", ["sandbox", "production", "custom"]).pipe(
    Options.withDescription("environment: picks the default stage segment (GCX_ENV, default custom)"),
    Options.optional
  ),
  baseUrl: text("base-url", "url", "GCX_BASE_URL", "base URL of the API"),
  authUrl: text("auth-url", "url", "GCX_AUTH_URL", "base URL of the token endpoint"),
  stage: text("stage", "segment", "GCX_STAGE", "stage segment of the quote paths; empty for none"),
  clientId: text("client-id", "id", "GCX_CLIENT_ID", "partner client id"),
  scope: text("scope", "scope", "GCX_SCOPE", "OAuth scope of the token request"),
  authStyle: Flag.choice("auth-style", ["body", "basic"]).pipe(
    Options.withDescription("how the client secret is sent to the token endpoint (GCX_AUTH_STYLE, default body)"),
    Options.optional
  ),
  embedded: Options.boolean("embedded").pipe(
    Options.withDescription(
      "use an in-process sandbox and its test partner (the default when no GCX_* connection setting is given)"
    )
  )
}

/** The parsed connection flags. */
export type Flags = Command.Command.ParseConfig<typeof options>
