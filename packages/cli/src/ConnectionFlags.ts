/**
 * The connection flags shared by `heartbeat`, `quote`, `watch`, `batch` and
 * `runner`, each standing for a `GCX_*` variable (see `Connection`). Kept apart
 * from `Connection` so that `gcx` defines its commands without loading the
 * client (`Lazy`).
 */
import type * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as GcxFlag from "./Flag.js"

const text = (name: string, metavar: string, variable: string, description: string) =>
  Flag.String(name).pipe(
    Flag.withMetavar(metavar),
    Flag.withDescription(`${description} (${variable})`),
    Flag.optional
  )

/** The connection flags. */
export const options = {
  env: GcxFlag.choice("env", ["sandbox", "production", "custom"]).pipe(
    Flag.withDescription("environment: picks the default stage segment (GCX_ENV, default custom)"),
    Flag.optional
  ),
  baseUrl: text("base-url", "url", "GCX_BASE_URL", "base URL of the API"),
  authUrl: text("auth-url", "url", "GCX_AUTH_URL", "base URL of the token endpoint"),
  stage: text("stage", "segment", "GCX_STAGE", "stage segment of the quote paths; empty for none"),
  clientId: text("client-id", "id", "GCX_CLIENT_ID", "partner client id"),
  scope: text("scope", "scope", "GCX_SCOPE", "OAuth scope of the token request"),
  authStyle: GcxFlag.choice("auth-style", ["body", "basic"]).pipe(
    Flag.withDescription("how the client secret is sent to the token endpoint (GCX_AUTH_STYLE, default body)"),
    Flag.optional
  ),
  embedded: Flag.Boolean("embedded").pipe(
    Flag.withDescription(
      "use an in-process sandbox and its test partner (heartbeat, quote, watch and batch use one anyway when no " +
        "GCX_* connection setting is given; runner, serve and a client-only --durable only with --embedded)"
    ),
    Flag.withDefault(false)
  )
}

/** The parsed connection flags. */
export type Flags = Command.Command.Config.Infer<typeof options>
